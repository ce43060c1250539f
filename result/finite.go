package result

import (
	"fmt"
	"strings"
)

// WarnNonFinite is the kind of the warning that figures were not finite
// numbers within ±MaxFigure (NaN, ±Inf, 1e300) and were written as 0.
const WarnNonFinite = "non_finite"

// keepFinite makes r encodable, recording what it changed as a warning.
func (r *Results) keepFinite() {
	paths := r.Finite()
	if len(paths) == 0 {
		return
	}
	shown := paths
	if len(shown) > 5 {
		shown = shown[:5]
	}
	more := ""
	if len(paths) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(paths)-len(shown))
	}
	r.Warnings = append(r.Warnings, Warning{Kind: WarnNonFinite,
		Message: fmt.Sprintf("%d figures were not finite numbers within ±%g and are written as 0: %s%s", len(paths), MaxFigure, strings.Join(shown, ", "), more)})
}
