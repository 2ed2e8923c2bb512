package stats

import (
	"encoding/json"
	"math"
)

// Interval is an estimate with lower and upper bounds. In JSON a non-finite
// number is null: an unbounded Lo or Hi, or an undefined Est.
type Interval struct {
	Est float64 `json:"est"`
	Lo  float64 `json:"lo"`
	Hi  float64 `json:"hi"`
}

// ExactInterval is an interval from inverting an exact test. Each bound is
// excluded when its Open flag is set, so the interval holds exactly the
// values the test does not reject at Alpha; Level is its actual coverage.
// In JSON, as for Interval, a non-finite number is null.
type ExactInterval struct {
	Est    float64
	Lo     float64
	Hi     float64
	LoOpen bool
	HiOpen bool
	Level  float64
	// TooFew is set when there are fewer pairs than the test needs to ever
	// reject at this level: the interval is then the whole range and the
	// renderings say "too few pairs".
	TooFew bool
}

type exactJSON struct {
	Est    *float64 `json:"est"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
	LoOpen bool     `json:"lo_open,omitempty"`
	HiOpen bool     `json:"hi_open,omitempty"`
	Level  float64  `json:"level"`
	TooFew bool     `json:"too_few,omitempty"`
}

// MarshalJSON writes non-finite numbers as null.
func (e ExactInterval) MarshalJSON() ([]byte, error) {
	return json.Marshal(exactJSON{finite(e.Est), finite(e.Lo), finite(e.Hi), e.LoOpen, e.HiOpen, e.Level, e.TooFew})
}

// UnmarshalJSON reads null as NaN for Est, -Inf for Lo and +Inf for Hi.
func (e *ExactInterval) UnmarshalJSON(b []byte) error {
	var v exactJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = ExactInterval{orElse(v.Est, math.NaN()), orElse(v.Lo, math.Inf(-1)), orElse(v.Hi, math.Inf(1)), v.LoOpen, v.HiOpen, v.Level, v.TooFew}
	return nil
}

// Contains reports whether v lies in the interval, honouring open bounds.
func (e ExactInterval) Contains(v float64) bool {
	if v < e.Lo || v > e.Hi {
		return false
	}
	if (v == e.Lo && e.LoOpen) || (v == e.Hi && e.HiOpen) {
		return false
	}
	return true
}

// MarshalJSON writes non-finite numbers as null.
func (iv Interval) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Est *float64 `json:"est"`
		Lo  *float64 `json:"lo"`
		Hi  *float64 `json:"hi"`
	}{finite(iv.Est), finite(iv.Lo), finite(iv.Hi)})
}

// UnmarshalJSON reads null as NaN for Est, -Inf for Lo and +Inf for Hi.
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var v struct {
		Est *float64 `json:"est"`
		Lo  *float64 `json:"lo"`
		Hi  *float64 `json:"hi"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*iv = Interval{Est: orElse(v.Est, math.NaN()), Lo: orElse(v.Lo, math.Inf(-1)), Hi: orElse(v.Hi, math.Inf(1))}
	return nil
}

func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func orElse(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}
