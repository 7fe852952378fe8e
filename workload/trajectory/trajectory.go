// Package trajectory is the spatio-temporal workload of Niyizamwiyitira &
// Lundberg 2017: mobile users' location updates every five minutes for a
// week in a synthetic medium-sized city, written sequentially or in random
// order, and four queries over the city's cells (antenna sites): distance,
// k nearest neighbours, range (triangle) and region (busiest cell at a
// weekday and time slot).
//
// The package knows the data and the queries but no database: an adapter
// implements Store (see store.go), and Oracle answers every query by brute
// force so that each adapter's answers can be checked exactly. Coordinates
// are whole metres on a UTM-like grid (easting, northing) and distances are
// planar, so every comparison is exact integer arithmetic and ties are real
// ties, not rounding accidents. See docs/trajectory.md.
package trajectory

import (
	"fmt"
	"strconv"
	"strings"
)

// Time grid of the study: one location update per user every five minutes
// for one week, Monday to Sunday.
const (
	SlotSeconds  = 300                // one location update every 5 minutes
	SlotsPerDay  = 24 * 3600 / 300    // 288
	Days         = 7                  // Monday..Sunday
	SlotsPerWeek = Days * SlotsPerDay // 2016 records per user-week
)

// Weekday is a day of the study's week, Monday = 1 ... Sunday = 7 (ISO 8601
// numbering, so a database stores a small integer).
type Weekday int8

// The days of the week.
const (
	Monday Weekday = 1 + iota
	Tuesday
	Wednesday
	Thursday
	Friday
	Saturday
	Sunday
)

var dayNames = [...]string{"", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// String is the English name ("Monday"), as records.csv writes it.
func (d Weekday) String() string {
	if d < Monday || d > Sunday {
		return "Weekday(" + strconv.Itoa(int(d)) + ")"
	}
	return dayNames[d]
}

// ParseWeekday accepts 1..7 (Monday = 1), a full English name or its first
// three letters, in any case.
func ParseWeekday(s string) (Weekday, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if n, err := strconv.Atoi(t); err == nil {
		if n >= 1 && n <= 7 {
			return Weekday(n), nil
		}
		return 0, fmt.Errorf("weekday %d out of range: want 1 (Monday) to 7 (Sunday)", n)
	}
	for d := Monday; d <= Sunday; d++ {
		name := strings.ToLower(dayNames[d])
		if t == name || (len(t) == 3 && strings.HasPrefix(name, t)) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown weekday %q: want 1-7 (Monday = 1), a name like monday or mon", s)
}

// ParseSlot accepts a slot number 0..287 or a clock time "HH:MM" (the slot
// containing it: 12:07 is slot 145, 12:05-12:10).
func ParseSlot(s string) (int, error) {
	t := strings.TrimSpace(s)
	if h, m, ok := strings.Cut(t, ":"); ok {
		hh, err1 := strconv.Atoi(h)
		mm, err2 := strconv.Atoi(m)
		if err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 {
			return 0, fmt.Errorf("bad time slot %q: want HH:MM (00:00-23:59) or a slot number 0-%d", s, SlotsPerDay-1)
		}
		return (hh*60 + mm) / 5, nil
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 0 || n >= SlotsPerDay {
		return 0, fmt.Errorf("bad time slot %q: want a slot number 0-%d (5 minutes each) or HH:MM", s, SlotsPerDay-1)
	}
	return n, nil
}

// SlotClock is the start of slot as "HH:MM".
func SlotClock(slot int) string {
	m := slot * 5
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// Tech is the radio technology a location update came through; exactly one
// of the record's GSM, UMTS and LTE flags is set.
type Tech uint8

// Radio technologies, oldest first (a cell supports a set of them as bits
// 1<<Tech).
const (
	GSM Tech = iota + 1
	UMTS
	LTE
)

// String is the technology's name.
func (t Tech) String() string {
	switch t {
	case GSM:
		return "GSM"
	case UMTS:
		return "UMTS"
	case LTE:
		return "LTE"
	}
	return "Tech(" + strconv.Itoa(int(t)) + ")"
}

// Kind is a cell's dominant land use; it drives who is there when (lunch
// crowds at commercial cells, nights at residential ones).
type Kind uint8

// Cell kinds.
const (
	Residential Kind = iota + 1
	Commercial
	Office
	Industrial
	Education
	Leisure
	Rural
)

var kindNames = [...]string{"", "residential", "commercial", "office", "industrial", "education", "leisure", "rural"}

// String is the kind's lower-case name, as cells.csv writes it.
func (k Kind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Cell is one antenna site of the city. Easting and northing are whole
// metres on the city's UTM-like grid (zone 33N); latitude and longitude are
// derived from them (WGS 84, 6 decimals).
type Cell struct {
	ID           int64
	Easting      int64
	Northing     int64
	Lat, Lon     float64
	Kind         Kind
	Techs        uint8 // bit 1<<Tech for each supported technology
	Municipality string
	County       string
	City         string
	Postcode     string
	Address      string

	idx     int32  // position in City.Cells
	csvTail []byte // ",easting,northing,...,address" of records.csv
}

// Supports reports whether the cell serves technology t.
func (c *Cell) Supports(t Tech) bool { return c.Techs&(1<<t) != 0 }

// Pos is the cell's position.
func (c *Cell) Pos() Point { return Point{X: c.Easting, Y: c.Northing} }

// Record is one location update: the study's 18 attributes. The cell's
// attributes (site id, easting, northing, latitude, longitude, municipality,
// county, city, postcode, address) are reached through Cell, which the
// generator shares between records instead of copying strings; a user's
// position is the position of the cell serving it, as in cell-based
// operator data.
type Record struct {
	User    int64
	Cell    *Cell
	Time    int32 // seconds since midnight, within the record's slot
	Profile int16
	Segment int16
	Weekday Weekday
	Tech    Tech
}

// Slot is the record's 5-minute slot of the day, 0..287.
func (r *Record) Slot() int { return int(r.Time) / SlotSeconds }

// Clock is the record's time of day as "HH:MM:SS".
func (r *Record) Clock() string {
	t := int(r.Time)
	return fmt.Sprintf("%02d:%02d:%02d", t/3600, t/60%60, t%60)
}

// GSM, UMTS and LTE are the record's source flags (exactly one is true).
func (r *Record) GSM() bool  { return r.Tech == GSM }
func (r *Record) UMTS() bool { return r.Tech == UMTS }
func (r *Record) LTE() bool  { return r.Tech == LTE }
