package sqlserver

// FreshDSN is freshDSN for the package's external tests (the CLI check):
// the DSN the engine gives, with a password, on an emptied database.
var FreshDSN = freshDSN

// TestPassword is the password FreshDSN's DSN carries.
const TestPassword = testPassword
