package trajectory

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// The city's grid: a fictional medium-sized Swedish coastal town, Havsvik,
// on UTM zone 33N (central meridian 15°E), near where the study's data came
// from. Its centre is at easting 536,000 m, northing 6,224,000 m (about
// 56.16°N, 15.58°E).
const (
	centreEasting  = 536_000
	centreNorthing = 6_224_000
	county         = "Sydkustens län"
)

// zone is a district of the city: where its cells are and what people do
// there. Weights are per cell: pop draws homes, jobs draws workplaces, shop
// draws shopping trips.
type zone struct {
	name         string
	kind         Kind
	dx, dy       int64 // offset of the zone's centre from the city centre (m)
	spread       int64 // standard deviation of cell positions (m)
	cells        int
	municipality string
	cities       []string
	postcode     string // first four digits, "371 3" -> "371 3x"
	streets      []string
	pop, jobs    int64
	shop         int64
	nightlife    bool // Friday and Saturday nights out end here
	ring         bool // rural: uniform in a ring around the town instead
}

// zones is the city model. ~300 cells: a dense commercial centre, a harbour
// office district, a retail park, an industrial estate, a campus, a park and
// arena, four residential districts, a suburb in the neighbouring
// municipality and the countryside around.
var zones = []zone{
	{name: "Centrum", kind: Commercial, spread: 500, cells: 40, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 3",
		streets: []string{"Storgatan", "Kungsgatan", "Drottninggatan", "Torggatan", "Hamngatan", "Ronnebygatan"}, pop: 2, jobs: 6, shop: 2, nightlife: true},
	{name: "Hamnen", kind: Office, dx: 1600, dy: -900, spread: 450, cells: 20, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 4",
		streets: []string{"Kajgatan", "Varvsgatan", "Skeppsbron"}, pop: 1, jobs: 12},
	{name: "Galleria", kind: Commercial, dx: -3600, dy: 2600, spread: 300, cells: 14, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 6",
		streets: []string{"Handelsvägen", "Köpmansgatan"}, jobs: 6, shop: 6},
	{name: "Verkstaden", kind: Industrial, dx: 4200, dy: 3200, spread: 700, cells: 22, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 7",
		streets: []string{"Verkstadsvägen", "Industrigatan", "Smedjevägen"}, jobs: 9},
	{name: "Campus", kind: Education, dx: 2600, dy: 1300, spread: 300, cells: 10, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 4",
		streets: []string{"Campusvägen", "Universitetsallén"}, pop: 1, jobs: 5},
	{name: "Stadsparken", kind: Leisure, dx: -1600, dy: -2600, spread: 500, cells: 12, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 5",
		streets: []string{"Parkvägen", "Arenavägen", "Badhusvägen"}, jobs: 1},
	{name: "Norrstaden", kind: Residential, dy: 3600, spread: 900, cells: 35, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 5",
		streets: []string{"Björkvägen", "Lönnvägen", "Ekvägen", "Almvägen"}, pop: 10},
	{name: "Väster", kind: Residential, dx: -3900, dy: -600, spread: 800, cells: 30, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 6",
		streets: []string{"Västra vägen", "Granvägen", "Tallstigen"}, pop: 10},
	{name: "Söder", kind: Residential, dx: 900, dy: -3900, spread: 800, cells: 30, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 3",
		streets: []string{"Sjövägen", "Strandvägen", "Måsvägen"}, pop: 10},
	{name: "Österby", kind: Residential, dx: 4600, dy: -700, spread: 750, cells: 28, municipality: "Havsvik", cities: []string{"Havsvik"}, postcode: "371 4",
		streets: []string{"Österbyvägen", "Ängsvägen", "Rosenvägen"}, pop: 10},
	{name: "Lindås", kind: Residential, dx: -6800, dy: 5600, spread: 700, cells: 18, municipality: "Lindås", cities: []string{"Lindås"}, postcode: "372 3",
		streets: []string{"Lindåsvägen", "Skolgatan", "Kyrkvägen"}, pop: 10, jobs: 1},
	{name: "Landsbygd", kind: Rural, spread: 11000, cells: 20, municipality: "Havsvik", cities: []string{"Bergsby", "Åkra", "Ljungby"}, postcode: "371 9",
		streets: []string{"Byvägen", "Gamla landsvägen", "Skogsvägen"}, pop: 4, jobs: 1, ring: true},
}

// twinPermille of cells get a twin: a second site on the same mast (same
// position and address, another id), as operators share masts. Twins make
// equal distances, and so the tie rules, part of every dataset.
const twinPermille = 60

// gridStep is the resolution (m) of the nearest-cell lookup used for
// travelling users.
const gridStep = 100

// City is the generated city: its cells sorted by id, and lookups the
// generator needs.
type City struct {
	Cells []Cell

	zoneOf    []int8     // zone index of each cell
	neighbors [][3]int32 // the three nearest other cells of each cell
	lunchNear [][3]int32 // the three nearest commercial cells of each cell
	lunchDist []int64    // distance (m) to the nearest commercial cell

	home, jobs, shop, edu, leisure, nightlife, shiftWork weighted

	gridX0, gridY0 int64
	gridW, gridH   int
	grid           []int32 // nearest cell of each gridStep square
}

// weighted picks a cell index with probability proportional to its weight,
// with integer arithmetic only (so the same seed gives the same data on
// every platform).
type weighted struct {
	cum []int64 // cumulative weights
	idx []int32
}

func (w *weighted) add(i int32, weight int64) {
	if weight <= 0 {
		return
	}
	total := int64(0)
	if n := len(w.cum); n > 0 {
		total = w.cum[n-1]
	}
	w.cum = append(w.cum, total+weight)
	w.idx = append(w.idx, i)
}

func (w *weighted) pick(r *rng) int32 {
	x := r.int63n(w.cum[len(w.cum)-1])
	i, _ := slices.BinarySearch(w.cum, x+1)
	return w.idx[i]
}

// newCity builds the city of seed.
func newCity(seed int64) (*City, error) {
	r := newRNG(hash3(uint64(seed), streamCity, 0))
	type proto struct {
		c    Cell
		zone int
	}
	var cells []proto
	used := map[int64]bool{}
	newID := func() int64 {
		for {
			id := 10000 + r.int63n(90000) // five-digit site ids
			if !used[id] {
				used[id] = true
				return id
			}
		}
	}
	for zi, z := range zones {
		for range z.cells {
			var e, n int64
			if z.ring {
				for {
					e, n = r.int63n(2*z.spread+1)-z.spread, r.int63n(2*z.spread+1)-z.spread
					if d := e*e + n*n; d >= 5500*5500 && d <= z.spread*z.spread {
						break
					}
				}
			} else {
				e, n = z.dx+r.gaussish(z.spread), z.dy+r.gaussish(z.spread)
			}
			c := Cell{
				ID:           newID(),
				Easting:      centreEasting + e,
				Northing:     centreNorthing + n,
				Kind:         z.kind,
				Techs:        techsFor(r, z.kind),
				Municipality: z.municipality,
				County:       county,
				City:         z.cities[r.intn(len(z.cities))],
				Postcode:     z.postcode + strconv.Itoa(r.intn(10)),
				Address:      z.streets[r.intn(len(z.streets))] + " " + strconv.Itoa(1+r.intn(150)),
			}
			cells = append(cells, proto{c, zi})
			if r.intn(1000) < twinPermille {
				t := c
				t.ID = newID()
				t.Techs = techsFor(r, z.kind)
				cells = append(cells, proto{t, zi})
			}
		}
	}
	slices.SortFunc(cells, func(a, b proto) int { return int(a.c.ID - b.c.ID) })

	city := &City{Cells: make([]Cell, len(cells)), zoneOf: make([]int8, len(cells))}
	for i, p := range cells {
		c := p.c
		c.idx = int32(i)
		c.Lat, c.Lon = utmToLatLon(c.Easting, c.Northing)
		c.csvTail = cellCSVTail(&c)
		city.Cells[i] = c
		city.zoneOf[i] = int8(p.zone)
		z := &zones[p.zone]
		ci := int32(i)
		city.home.add(ci, z.pop)
		city.jobs.add(ci, z.jobs)
		city.shop.add(ci, z.shop)
		if z.kind == Education {
			city.edu.add(ci, 1)
		}
		if z.kind == Leisure {
			city.leisure.add(ci, 3)
		} else if z.kind == Commercial || z.kind == Residential {
			city.leisure.add(ci, 1) // cafés, friends' homes
		}
		if z.nightlife {
			city.nightlife.add(ci, 1)
		}
		if z.kind == Industrial {
			city.shiftWork.add(ci, 7)
		} else if z.kind == Commercial {
			city.shiftWork.add(ci, 1)
		}
	}
	for _, w := range []*weighted{&city.home, &city.jobs, &city.shop, &city.edu, &city.leisure, &city.nightlife, &city.shiftWork} {
		if len(w.cum) == 0 {
			return nil, fmt.Errorf("trajectory: city model has an empty place category")
		}
	}
	city.index()
	return city, nil
}

// techsFor draws the technologies of a cell: GSM everywhere, UMTS and LTE
// on most urban sites and fewer rural ones.
func techsFor(r *rng, k Kind) uint8 {
	t := uint8(1 << GSM)
	umts, lte := 950, 900
	if k == Rural {
		umts, lte = 800, 600
	}
	if k == Commercial {
		lte = 1000
	}
	if r.intn(1000) < umts {
		t |= 1 << UMTS
	}
	if r.intn(1000) < lte {
		t |= 1 << LTE
	}
	return t
}

// index builds the neighbour lists and the nearest-cell grid.
func (c *City) index() {
	n := len(c.Cells)
	c.neighbors = make([][3]int32, n)
	c.lunchNear = make([][3]int32, n)
	c.lunchDist = make([]int64, n)
	var commercial []int32
	for i := range c.Cells {
		if c.Cells[i].Kind == Commercial {
			commercial = append(commercial, int32(i))
		}
	}
	order := make([]int32, 0, n)
	for i := range c.Cells {
		p := c.Cells[i].Pos()
		byDist := func(a, b int32) int {
			da, db := Dist2(p, c.Cells[a].Pos()), Dist2(p, c.Cells[b].Pos())
			if da != db {
				if da < db {
					return -1
				}
				return 1
			}
			return int(a - b)
		}
		order = order[:0]
		for j := range c.Cells {
			if j != i {
				order = append(order, int32(j))
			}
		}
		slices.SortFunc(order, byDist)
		copy(c.neighbors[i][:], order)
		com := slices.Clone(commercial)
		slices.SortFunc(com, byDist)
		for k := range 3 {
			c.lunchNear[i][k] = com[min(k, len(com)-1)]
		}
		c.lunchDist[i] = isqrt(Dist2(p, c.Cells[com[0]].Pos()))
	}

	minX, minY, maxX, maxY := c.Cells[0].Easting, c.Cells[0].Northing, c.Cells[0].Easting, c.Cells[0].Northing
	for i := range c.Cells {
		minX, maxX = min(minX, c.Cells[i].Easting), max(maxX, c.Cells[i].Easting)
		minY, maxY = min(minY, c.Cells[i].Northing), max(maxY, c.Cells[i].Northing)
	}
	c.gridX0, c.gridY0 = minX, minY
	c.gridW = int((maxX-minX)/gridStep) + 1
	c.gridH = int((maxY-minY)/gridStep) + 1
	c.grid = make([]int32, c.gridW*c.gridH)
	for gy := range c.gridH {
		for gx := range c.gridW {
			p := Point{X: c.gridX0 + int64(gx)*gridStep + gridStep/2, Y: c.gridY0 + int64(gy)*gridStep + gridStep/2}
			best, bestD := int32(0), int64(math.MaxInt64)
			for j := range c.Cells {
				if d := Dist2(p, c.Cells[j].Pos()); d < bestD {
					best, bestD = int32(j), d
				}
			}
			c.grid[gy*c.gridW+gx] = best
		}
	}
}

// nearest is the cell serving position p (the nearest, to the grid's
// resolution).
func (c *City) nearest(p Point) int32 {
	gx := min(max(int((p.X-c.gridX0)/gridStep), 0), c.gridW-1)
	gy := min(max(int((p.Y-c.gridY0)/gridStep), 0), c.gridH-1)
	return c.grid[gy*c.gridW+gx]
}

// Zone is the name of the district cell i belongs to.
func (c *City) Zone(i int) string { return zones[c.zoneOf[i]].name }

// Bounds is the bounding box of the cells.
func (c *City) Bounds() (minX, minY, maxX, maxY int64) {
	return c.gridX0, c.gridY0, c.gridX0 + int64(c.gridW-1)*gridStep, c.gridY0 + int64(c.gridH-1)*gridStep
}

func isqrt(x int64) int64 {
	s := int64(math.Sqrt(float64(x)))
	for s*s > x {
		s--
	}
	for (s+1)*(s+1) <= x {
		s++
	}
	return s
}

// LatLon is p's latitude and longitude in degrees, as the cells' Lat and
// Lon are derived from their easting and northing: for adapters whose
// spatial index works on the sphere (MongoDB's 2dsphere) and must turn a
// query's point or box into coordinates.
func LatLon(p Point) (lat, lon float64) { return utmToLatLon(p.X, p.Y) }

// utmToLatLon is UTMToLatLon rounded to 6 decimals (~0.1 m): the cells'
// Lat and Lon. The rounding also absorbs last-bit differences between
// platforms that fuse multiply-adds, so a seed gives the same digits
// everywhere. It runs once per cell, never per record.
func utmToLatLon(easting, northing int64) (lat, lon float64) {
	lat, lon = UTMToLatLon(float64(easting), float64(northing))
	return math.Round(lat*1e6) / 1e6, math.Round(lon*1e6) / 1e6
}

// UTMToLatLon converts a UTM zone 33N position (WGS 84) to latitude and
// longitude in degrees, unrounded, with Snyder's inverse transverse
// Mercator series (USGS Professional Paper 1395), good to well under a
// metre this close to the central meridian: the one formula behind the
// cells' coordinates (rounded, see LatLon) and any adapter that must turn
// a query's point into coordinates (Redis's GEO search).
func UTMToLatLon(easting, northing float64) (lat, lon float64) {
	const (
		a    = 6378137.0
		f    = 1 / 298.257223563
		k0   = 0.9996
		lon0 = 15.0 // zone 33 central meridian
		e2   = f * (2 - f)
		ep2  = e2 / (1 - e2)
	)
	x := easting - 500000
	m := northing / k0
	mu := m / (a * (1 - e2/4 - 3*e2*e2/64 - 5*e2*e2*e2/256))
	s := math.Sqrt(1 - e2)
	e1 := (1 - s) / (1 + s)
	phi1 := mu + (3*e1/2-27*e1*e1*e1/32)*math.Sin(2*mu) +
		(21*e1*e1/16-55*e1*e1*e1*e1/32)*math.Sin(4*mu) +
		(151*e1*e1*e1/96)*math.Sin(6*mu) +
		(1097*e1*e1*e1*e1/512)*math.Sin(8*mu)
	sin1, cos1 := math.Sin(phi1), math.Cos(phi1)
	tan1 := sin1 / cos1
	c1 := ep2 * cos1 * cos1
	t1 := tan1 * tan1
	w := 1 - e2*sin1*sin1
	n1 := a / math.Sqrt(w)
	r1 := a * (1 - e2) / (w * math.Sqrt(w))
	d := x / (n1 * k0)
	d2 := d * d
	d4 := d2 * d2
	latRad := phi1 - (n1*tan1/r1)*(d2/2-
		(5+3*t1+10*c1-4*c1*c1-9*ep2)*d4/24+
		(61+90*t1+298*c1+45*t1*t1-252*ep2-3*c1*c1)*d4*d2/720)
	lonRad := (d - (1+2*t1+c1)*d2*d/6 +
		(5-2*c1+28*t1-3*c1*c1+8*ep2+24*t1*t1)*d4*d/120) / cos1
	return latRad * 180 / math.Pi, lon0 + lonRad*180/math.Pi
}
