package trajectory

import "fmt"

// Options configures New.
type Options struct {
	// Scale sets the number of records: round(Scale x 6,483,397.5), so 1, 2
	// and 4 are the study's three datasets (see RecordsForScale).
	Scale float64
	// Seed makes the dataset reproducible: the same (Scale, Seed) gives the
	// same city, users and records on every run and machine.
	Seed int64
}

// Generator produces the dataset of one (Scale, Seed). Records are in time
// order, all users' updates of one 5-minute slot before the next slot's:
// record i is user i mod U + 1 at slot-of-week i div U (U users; slot of
// week 0 is Monday 00:00-00:05). Any record can be produced from its index
// alone, so loading streams in constant memory and can be split anywhere.
//
// A Generator is immutable and safe for concurrent use; a Cursor (which
// caches day plans) is not.
type Generator struct {
	seed  int64
	scale float64
	n     int64
	city  *City
	users []user
}

// New builds the city and the users of o (records are made on demand).
func New(o Options) (*Generator, error) {
	n, err := RecordsForScale(o.Scale)
	if err != nil {
		return nil, fmt.Errorf("trajectory: %w", err)
	}
	city, err := newCity(o.Seed)
	if err != nil {
		return nil, err
	}
	g := &Generator{seed: o.Seed, scale: o.Scale, n: n, city: city}
	g.users = make([]user, UsersForRecords(n))
	for i := range g.users {
		g.users[i] = newUser(city, o.Seed, int64(i+1))
	}
	return g, nil
}

// Len is the number of records.
func (g *Generator) Len() int64 { return g.n }

// Users is the number of users (ids 1..Users).
func (g *Generator) Users() int { return len(g.users) }

// City is the generated city.
func (g *Generator) City() *City { return g.city }

// Seed is the generator's seed.
func (g *Generator) Seed() int64 { return g.seed }

// Scale is the generator's scale.
func (g *Generator) Scale() float64 { return g.scale }

// SlotRange is the index range [from, to) of the records at slot of week w
// (day*288 + slot); empty when the dataset ends before w.
func (g *Generator) SlotRange(w int) (from, to int64) {
	u := int64(len(g.users))
	from = min(int64(w)*u, g.n)
	to = min(from+u, g.n)
	return from, to
}

// Record is record i, 0 <= i < Len(). It rebuilds the user's day plan; use
// a Cursor to produce many records.
func (g *Generator) Record(i int64) Record {
	var p dayPlan
	u := i % int64(len(g.users))
	w := int(i / int64(len(g.users)))
	g.buildPlan(&p, &g.users[u], u+1, w/SlotsPerDay)
	return g.record(&p, u, w)
}

// record makes user index u's record at slot of week w from its day plan.
func (g *Generator) record(p *dayPlan, u int64, w int) Record {
	us := &g.users[u]
	uid := u + 1
	slot := w % SlotsPerDay
	h := hash3(uint64(g.seed), streamRecord, uint64(uid)<<11|uint64(w))
	cell := &g.city.Cells[p.cellAt(g.city, slot, h)]
	return Record{
		User:    uid,
		Cell:    cell,
		Time:    int32(slot*SlotSeconds) + int32((h>>44)%SlotSeconds),
		Profile: us.profile,
		Segment: us.segment,
		Weekday: Weekday(w/SlotsPerDay + 1),
		Tech:    techFor(us.device, cell, h>>20),
	}
}

// downgradePermille of updates use an older technology than the best the
// handset and the cell share (congestion, indoor coverage).
const downgradePermille = 100

// techFor is the technology of one update: the best that both the handset
// and the cell support, sometimes the next older one.
func techFor(device Tech, c *Cell, h uint64) Tech {
	t := device
	for t > GSM && !c.Supports(t) {
		t--
	}
	if h%1000 < downgradePermille {
		for d := t - 1; d >= GSM; d-- {
			if c.Supports(d) {
				return d
			}
		}
	}
	return t
}

// Cursor produces records fast by keeping each user's plan of the current
// day. Not safe for concurrent use: give each goroutine its own.
type Cursor struct {
	g     *Generator
	plans []dayPlan
}

// NewCursor returns a Cursor over g (its memory grows with the number of
// users, not records).
func (g *Generator) NewCursor() *Cursor {
	c := &Cursor{g: g, plans: make([]dayPlan, len(g.users))}
	for i := range c.plans {
		c.plans[i].day = -1
	}
	return c
}

// At is record i, 0 <= i < Len().
func (c *Cursor) At(i int64) Record {
	n := int64(len(c.g.users))
	return c.at(i%n, int(i/n))
}

func (c *Cursor) at(u int64, w int) Record {
	p := &c.plans[u]
	if day := w / SlotsPerDay; int(p.day) != day {
		c.g.buildPlan(p, &c.g.users[u], u+1, day)
	}
	return c.g.record(p, u, w)
}

// Fill writes records from, from+1, ... into dst and returns how many it
// wrote (fewer than len(dst) at the end of the dataset).
func (c *Cursor) Fill(from int64, dst []Record) int {
	if from < 0 || from >= c.g.n {
		return 0
	}
	k := int(min(int64(len(dst)), c.g.n-from))
	n := int64(len(c.g.users))
	u, w := from%n, int(from/n)
	for j := range k {
		dst[j] = c.at(u, w)
		if u++; u == n {
			u, w = 0, w+1
		}
	}
	return k
}
