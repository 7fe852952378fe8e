package microblog

import (
	"errors"
	"strings"
	"testing"
)

func TestPartRecords(t *testing.T) {
	p := Part{I: 1, N: 3, First: 4, Last: 6}
	for _, tc := range []struct {
		recorded []string
		loaded   bool   // CheckRecorded wraps ErrPartLoaded
		other    string // CheckRecorded says this instead
		complete bool
	}{
		{nil, false, "", false},
		{[]string{"0/3", "2/3"}, false, "", false},
		{[]string{"0/3", "1/3"}, true, "", false},
		{[]string{"2/3", "0/3", "1/3"}, true, "", true},
		{[]string{"0/3", "0/3", "2/3"}, false, "", false}, // a part recorded twice counts once
		{[]string{"0/2"}, false, "part 0/2 of a load in another number of parts", false},
		{[]string{"0/3", "1/30", "2/3"}, false, "another number of parts", false},
	} {
		err := p.CheckRecorded(tc.recorded)
		switch {
		case tc.loaded && !errors.Is(err, ErrPartLoaded):
			t.Errorf("CheckRecorded(%v) = %v, want ErrPartLoaded", tc.recorded, err)
		case tc.other != "" && (err == nil || errors.Is(err, ErrPartLoaded) || !strings.Contains(err.Error(), tc.other)):
			t.Errorf("CheckRecorded(%v) = %v, want an error saying %q", tc.recorded, err, tc.other)
		case !tc.loaded && tc.other == "" && err != nil:
			t.Errorf("CheckRecorded(%v) = %v, want nil", tc.recorded, err)
		}
		if got := p.Complete(tc.recorded); got != tc.complete {
			t.Errorf("Complete(%v) = %v, want %v", tc.recorded, got, tc.complete)
		}
	}
}
