package vnet

import "testing"

func TestParseRate(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		bad  bool
	}{
		{"10mbit", 10_000_000, false},
		{"1mbps", 8_000_000, false},
		{"500kbit", 500_000, false},
		{"1.5gbit", 1_500_000_000, false},
		{"10 mbit", 0, true},
		{"10", 0, true},
		{"1bit", 0, true}, // below 8kbit
	}
	for _, tc := range cases {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}
