package trajectory

// userType is what drives a user's weekly rhythm.
type userType uint8

const (
	commuter    userType = iota // office, shop, factory or school staff: 9 to 5
	student                     // campus by day, out more in the evenings
	shiftWorker                 // early, late or night shifts, mostly industrial
	homeStayer                  // retired, parents at home: errands by day
	salesperson                 // visits clients around the city all day
	numUserTypes
)

// typeShare is each user type's share in per mille.
var typeShare = [numUserTypes]int{520, 130, 60, 200, 90}

// corporateShare is the per mille of each user type in the corporate
// segment; the rest are cost or quality aware.
var corporateShare = [numUserTypes]int{300, 50, 50, 50, 600}

// nightOutShare is the per mille of each user type going out on a Friday or
// Saturday night.
var nightOutShare = [numUserTypes]int{150, 300, 100, 40, 150}

// Shifts of shift workers.
const (
	earlyShift = iota // 06:00-14:00
	lateShift         // 14:00-22:00
	nightShift        // 22:00-06:00, Monday to Friday nights
)

// Segments (the study's client types).
const (
	segCorporate    = 1
	segCostAware    = 2
	segQualityAware = 3
)

// user is everything fixed about one user for the week.
type user struct {
	typ      userType
	shift    uint8
	device   Tech // the best technology the handset supports
	profile  int16
	segment  int16
	home     int32 // cell indices
	work     int32
	lunch    int32
	shop     int32
	leisure  int32
	lunchOut int // per mille of days lunch is taken away from work
}

func newUser(c *City, seed int64, uid int64) user {
	r := newRNG(hash3(uint64(seed), streamUser, uint64(uid)))
	var u user
	x := r.intn(1000)
	for t, share := range typeShare {
		if x < share {
			u.typ = userType(t)
			break
		}
		x -= share
	}
	// Profile: user type and handset platform (two per type), 1..10.
	u.profile = int16(2*int(u.typ) + r.intn(2) + 1)
	switch {
	case r.chance(corporateShare[u.typ]):
		u.segment = segCorporate
	case r.chance(550):
		u.segment = segCostAware
	default:
		u.segment = segQualityAware
	}
	switch x := r.intn(1000); {
	case x < 700:
		u.device = LTE
	case x < 920:
		u.device = UMTS
	default:
		u.device = GSM
	}
	u.home = c.home.pick(r)
	switch u.typ {
	case commuter, salesperson:
		u.work = c.jobs.pick(r)
	case student:
		u.work = c.edu.pick(r)
	case shiftWorker:
		u.work = c.shiftWork.pick(r)
		u.shift = uint8(r.intn(3))
	default:
		u.work = u.home
	}
	u.lunch = c.lunchNear[u.work][r.intn(3)]
	switch u.typ {
	case commuter:
		u.lunchOut = 150
		if c.lunchDist[u.work] <= 1500 {
			u.lunchOut = 550
		}
	case student:
		u.lunchOut = 300
	case salesperson:
		u.lunchOut = 700
	case homeStayer:
		u.lunchOut = 250
	default:
		u.lunchOut = 100
	}
	u.shop = c.shop.pick(r)
	u.leisure = c.leisure.pick(r)
	return u
}

// maxSegs bounds a day plan; the busiest plans use about 20.
const maxSegs = 28

// seg is a stretch of a user's day: at cell `at` from slot start, or, when
// to >= 0, travelling from `at` to `to` for dur slots.
type seg struct {
	start int16
	dur   int16
	at    int32
	to    int32
}

// dayPlan is one user's day, slot by slot, as a few segments.
type dayPlan struct {
	day  int8 // 0 = Monday; -1 = not built
	n    uint8
	segs [maxSegs]seg
}

// planner writes a dayPlan in time order.
type planner struct {
	p    *dayPlan
	city *City
	cur  int32 // where the user is
	t    int   // current slot
}

func (pl *planner) add(s seg) {
	p := pl.p
	if int(s.start) >= SlotsPerDay || int(p.n) == maxSegs {
		return
	}
	if p.n > 0 && p.segs[p.n-1].start == s.start {
		p.segs[p.n-1] = s
		return
	}
	p.segs[p.n] = s
	p.n++
}

func (pl *planner) begin(at int32) {
	pl.p.n = 0
	pl.cur, pl.t = at, 0
	pl.add(seg{at: at, to: -1})
}

// stayUntil stays where the user is until the clock time minute (no-op when
// that time has passed).
func (pl *planner) stayUntil(minute int) {
	if s := minute / 5; s > pl.t {
		pl.t = min(s, SlotsPerDay)
	}
}

func (pl *planner) stayFor(minutes int) { pl.stayUntil(pl.t*5 + minutes) }

// goTo travels to cell `to` at about 24 km/h through town (one slot per 2
// km, 1 to 6 slots) and arrives there.
func (pl *planner) goTo(to int32) {
	if to == pl.cur || pl.t >= SlotsPerDay {
		return
	}
	a, b := pl.city.Cells[pl.cur].Pos(), pl.city.Cells[to].Pos()
	d := min(max(int((isqrt(Dist2(a, b))+1000)/2000), 1), 6)
	pl.add(seg{start: int16(pl.t), dur: int16(d), at: pl.cur, to: to})
	pl.t += d
	pl.add(seg{start: int16(pl.t), at: to, to: -1})
	pl.cur = to
}

// handoverPermille of a stationary user's updates come through one of the
// three neighbouring cells instead of the nearest (load balancing, indoor
// coverage, another sector of a shared mast).
const handoverPermille = 120

// cellAt is the serving cell at slot; h supplies the record's randomness.
func (p *dayPlan) cellAt(c *City, slot int, h uint64) int32 {
	i := 0
	for i+1 < int(p.n) && int(p.segs[i+1].start) <= slot {
		i++
	}
	s := &p.segs[i]
	if s.to >= 0 {
		a, b := c.Cells[s.at].Pos(), c.Cells[s.to].Pos()
		k, n := int64(slot-int(s.start)+1), int64(s.dur)+1
		return c.nearest(Point{X: a.X + (b.X-a.X)*k/n, Y: a.Y + (b.Y-a.Y)*k/n})
	}
	if h%1000 < handoverPermille {
		return c.neighbors[s.at][(h>>10)%3]
	}
	return s.at
}

// buildPlan writes user uid's plan for day (0 = Monday) into p.
func (g *Generator) buildPlan(p *dayPlan, u *user, uid int64, day int) {
	r := rng{s: hash3(uint64(g.seed), streamPlan, uint64(uid)<<3|uint64(day))}
	pl := planner{p: p, city: g.city}
	p.day = int8(day)

	// Where the night began: a night shift or a night out ends after
	// midnight.
	prev := (day + 6) % 7
	switch {
	case u.typ == shiftWorker && u.shift == nightShift && prev <= 4:
		pl.begin(u.work)
		pl.stayUntil(r.around(6*60, 10))
		pl.goTo(u.home)
	case g.nightOut(u, uid, prev):
		pl.begin(g.nightCell(uid, prev))
		pl.stayUntil(r.around(60, 30))
		pl.goTo(u.home)
	default:
		pl.begin(u.home)
	}

	weekend := day >= 5
	switch {
	case weekend:
		weekendDay(&pl, &r, u, day)
	case u.typ == homeStayer || r.chance(40): // 4 % sick or on leave
		homeDay(&pl, &r, u)
	case u.typ == commuter:
		pl.stayUntil(r.around(7*60+30, 60))
		pl.goTo(u.work)
		lunchBreak(&pl, &r, u, 12*60, 30, 30, 60)
		pl.stayUntil(r.around(16*60+30, 60))
		errand(&pl, &r, u, 250, 20, 60)
		pl.goTo(u.home)
	case u.typ == student:
		pl.stayUntil(r.around(7*60+50, 30))
		pl.goTo(u.work)
		lunchBreak(&pl, &r, u, 12*60, 20, 30, 50)
		pl.stayUntil(r.around(15*60, 60))
		errand(&pl, &r, u, 150, 20, 45)
		pl.goTo(u.home)
	case u.typ == salesperson:
		pl.stayUntil(r.around(7*60+45, 30))
		pl.goTo(u.work)
		pl.stayFor(r.between(30, 60))
		lunched := false
		for range r.between(3, 5) {
			if !lunched && pl.t*5 >= 11*60+30 {
				lunched = true
				if r.chance(u.lunchOut) {
					pl.goTo(u.lunch)
					pl.stayFor(r.between(30, 60))
				}
			}
			pl.goTo(g.city.jobs.pick(&r))
			pl.stayFor(r.between(45, 100))
		}
		pl.goTo(u.work)
		pl.stayUntil(r.around(17*60, 30))
		pl.goTo(u.home)
	case u.typ == shiftWorker:
		switch u.shift {
		case earlyShift:
			pl.stayUntil(r.around(5*60+30, 10))
			pl.goTo(u.work)
			pl.stayUntil(r.around(14*60+10, 10))
			errand(&pl, &r, u, 300, 20, 60)
			pl.goTo(u.home)
		case lateShift:
			if r.chance(300) {
				pl.stayUntil(r.around(10*60, 30))
				errand(&pl, &r, u, 1000, 30, 60)
				pl.goTo(u.home)
			}
			pl.stayUntil(r.around(13*60+30, 10))
			pl.goTo(u.work)
			pl.stayUntil(r.around(22*60+10, 10))
			pl.goTo(u.home)
		default: // night: asleep in the morning, out to work at 21:30
			if r.chance(300) {
				pl.stayUntil(r.around(15*60, 60))
				errand(&pl, &r, u, 1000, 20, 60)
				pl.goTo(u.home)
			}
			pl.stayUntil(r.around(21*60+30, 10))
			pl.goTo(u.work)
			return // at work past midnight
		}
	}
	g.evening(&pl, &r, u, uid, day)
}

// lunchBreak goes to the user's lunch cell with probability u.lunchOut at
// about mean ± spread minutes, for lo..hi minutes, and back.
func lunchBreak(pl *planner, r *rng, u *user, mean, spread, lo, hi int) {
	if !r.chance(u.lunchOut) {
		return
	}
	back := pl.cur
	pl.stayUntil(r.around(mean, spread))
	pl.goTo(u.lunch)
	pl.stayFor(r.between(lo, hi))
	pl.goTo(back)
}

// errand visits the user's shop with probability permille for lo..hi
// minutes.
func errand(pl *planner, r *rng, u *user, permille, lo, hi int) {
	if r.chance(permille) {
		pl.goTo(u.shop)
		pl.stayFor(r.between(lo, hi))
	}
}

// homeDay is a weekday at home: morning shopping, lunch out, an afternoon
// walk.
func homeDay(pl *planner, r *rng, u *user) {
	if r.chance(450) {
		pl.stayUntil(r.around(10*60+15, 45))
		errand(pl, r, u, 1000, 30, 90)
	}
	if r.chance(u.lunchOut) {
		pl.stayUntil(r.around(12*60, 20))
		pl.goTo(u.lunch)
		pl.stayFor(r.between(40, 80))
	}
	pl.goTo(u.home)
	if r.chance(300) {
		pl.stayUntil(r.around(15*60, 60))
		pl.goTo(u.leisure)
		pl.stayFor(r.between(45, 90))
		pl.goTo(u.home)
	}
}

// weekendDay: Saturday shopping and evening out, Sunday leisure.
func weekendDay(pl *planner, r *rng, u *user, day int) {
	if day == 5 {
		if r.chance(600) {
			pl.stayUntil(r.around(11*60+30, 90))
			errand(pl, r, u, 1000, 60, 150)
			pl.goTo(u.home)
		}
		if r.chance(350) {
			pl.stayUntil(r.around(17*60, 60))
			pl.goTo(u.leisure)
			pl.stayFor(r.between(60, 180))
			pl.goTo(u.home)
		}
		return
	}
	if r.chance(500) {
		pl.stayUntil(r.around(13*60+30, 90))
		pl.goTo(u.leisure)
		pl.stayFor(r.between(60, 180))
		pl.goTo(u.home)
	}
	if r.chance(200) {
		pl.stayUntil(r.around(12*60, 60))
		errand(pl, r, u, 1000, 30, 90)
		pl.goTo(u.home)
	}
}

// evening ends the day: a night out (Friday, Saturday) that lasts past
// midnight, or an evening at a leisure place.
func (g *Generator) evening(pl *planner, r *rng, u *user, uid int64, day int) {
	if g.nightOut(u, uid, day) {
		pl.stayUntil(r.around(21*60+30, 30))
		pl.goTo(g.nightCell(uid, day))
		return
	}
	permille := 200
	if u.typ == student {
		permille = 400
	}
	if r.chance(permille) {
		pl.stayUntil(r.around(19*60, 45))
		pl.goTo(u.leisure)
		pl.stayFor(r.between(60, 120))
		pl.goTo(u.home)
	}
}

// nightOut decides, from (seed, user, day) alone, whether the user goes out
// on Friday or Saturday night: both the evening and the next day's plan
// ask, so they agree without state.
func (g *Generator) nightOut(u *user, uid int64, day int) bool {
	if day != 4 && day != 5 {
		return false
	}
	if u.typ == shiftWorker && u.shift == nightShift && day == 4 {
		return false // at work
	}
	r := rng{s: hash3(uint64(g.seed), streamNight, uint64(uid)<<3|uint64(day))}
	return r.chance(nightOutShare[u.typ])
}

// nightCell is where a night out happens: a cell in the centre.
func (g *Generator) nightCell(uid int64, day int) int32 {
	r := rng{s: hash3(uint64(g.seed), streamNight, uint64(uid)<<3|uint64(day))}
	r.next() // the draw nightOut used
	return g.city.nightlife.pick(&r)
}
