package cluster

// CheckOptions reports what engine's Up would refuse in opts, asking the
// engine itself (OptionChecker); an engine without a check, or a name no
// engine is registered under, refuses nothing here.
func CheckOptions(engine string, opts Options) error {
	e, err := Get(engine)
	if err != nil {
		return nil
	}
	if oc, ok := e.(OptionChecker); ok {
		return oc.CheckOptions(opts)
	}
	return nil
}
