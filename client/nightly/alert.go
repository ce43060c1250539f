package nightly

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/internal/post"
	"github.com/xrun-dev/xrun/internal/table"
)

// Alert is what a confirmed regression sends: to a file (--alert), which
// the nightly workflow turns into a GitHub issue, and to a webhook. Text
// makes it a Slack or Mattermost incoming-webhook message as it is.
type Alert struct {
	Title       string       `json:"title"`
	Text        string       `json:"text"`
	Regressions []Regression `json:"regressions"`
	Created     time.Time    `json:"created"`
}

// Regression is one confirmed regression.
type Regression struct {
	Experiment     string `json:"experiment"`
	Case           string `json:"case"`
	Implementation string `json:"implementation"`
	GPU            string `json:"gpu"`
	Host           string `json:"host"`
	JobID          string `json:"job_id"`
	// ConfirmedBy is the run that confirmed the regression: a rerun of
	// JobID, or JobID itself when it confirmed the earlier suspect
	// Confirms. Since is the run that confirmed a regression that JobID
	// shows still holds.
	ConfirmedBy string   `json:"confirmed_by,omitempty"`
	Confirms    string   `json:"confirms,omitempty"`
	Since       string   `json:"since,omitempty"`
	MedianMS    float64  `json:"median_ms"`
	BaselineMS  float64  `json:"baseline_ms"`
	Change      float64  `json:"change"`
	Score       float64  `json:"score"`
	PValue      *float64 `json:"p_value,omitempty"`
	// Basis and Relative are the reading the regression was judged on:
	// the ratio to the run's baseline implementation, or the time over
	// the run's host factor (regress.Verdict).
	Basis    string           `json:"basis,omitempty"`
	Relative *regress.Reading `json:"relative,omitempty"`
	// ConfigChange says which autotuned kernels ran another config than
	// in the baseline's runs (regress.Verdict.ConfigChange).
	ConfigChange string `json:"config_change,omitempty"`
}

// Alert returns the payload of the report's confirmed regressions, or nil
// when there is none.
func (rep *Report) Alert() *Alert {
	var regs []Regression
	var exps []string
	for _, r := range rep.Runs {
		for _, p := range r.Points {
			if p.Verdict.Status != regress.Regressed {
				continue
			}
			// Who confirmed it: a rerun (ConfirmedBy), this run, which
			// confirmed an earlier suspect (Confirms), or an earlier run,
			// for a regression that holds (Since).
			confirmed := p.Verdict.ConfirmedBy
			if confirmed == "" && p.Verdict.Confirms != "" {
				confirmed = r.JobID
			}
			regs = append(regs, Regression{Experiment: r.Experiment, Case: p.Case, Implementation: p.Implementation, GPU: r.GPU,
				Host: r.Host, JobID: r.JobID, ConfirmedBy: confirmed, Confirms: p.Verdict.Confirms, Since: p.Verdict.Since, MedianMS: p.MedianMS, BaselineMS: p.Verdict.Median,
				Change: p.Verdict.Change, Score: p.Verdict.Score, PValue: p.Verdict.PValue, Basis: p.Verdict.Basis, Relative: p.Verdict.Relative,
				ConfigChange: p.Verdict.ConfigChange})
			if !contains(exps, r.Experiment) {
				exps = append(exps, r.Experiment)
			}
		}
	}
	if len(regs) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "xrun: %d confirmed regression(s) in %s\n", len(regs), strings.Join(exps, ", "))
	for _, g := range regs {
		rel := ""
		if r := g.Relative; r != nil && r.Median > 0 {
			rel = "; " + r.Of + " " + table.Change(r.Change)
		}
		fmt.Fprintf(&b, "- %s · %s · %s on %s: %s ms against %s ms (%s%s), %s\n", g.Experiment,
			g.Implementation, g.Case, g.GPU, table.FixedMS(g.MedianMS), table.FixedMS(g.BaselineMS), table.Change(g.Change), rel, g.who())
	}
	return &Alert{Title: "Nightly regression: " + strings.Join(exps, ", "), Text: b.String(), Regressions: regs, Created: time.Now().UTC()}
}

// who says which jobs show the regression, for the alert's text.
func (g Regression) who() string {
	switch {
	case g.Confirms != "":
		return fmt.Sprintf("job %s, which confirms the suspect of job %s", g.JobID, g.Confirms)
	case g.ConfirmedBy != "":
		return fmt.Sprintf("job %s, confirmed by rerun %s", g.JobID, g.ConfirmedBy)
	case g.Since != "":
		return fmt.Sprintf("job %s, regressed since job %s", g.JobID, g.Since)
	}
	return "job " + g.JobID
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// WriteFile writes the alert as JSON to path.
func (a *Alert) WriteFile(path string) error {
	data, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("write alert: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write alert: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write alert: %w", err)
	}
	return nil
}

// Post sends the alert to a webhook as JSON, with a bearer token when one
// is given: three tries (each with a 30 s timeout) on a network failure, a
// 429 or a 5xx, no redirect followed, and no message that shows the URL's
// user info, query or the token (internal/post). logf gets a line per failed
// try.
func (a *Alert) Post(ctx context.Context, url, token string, logf func(string, ...any)) error {
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("post alert: %w", err)
	}
	return post.Post(ctx, url, token, data, post.Options{
		Attempts: 3, Base: time.Second, Max: 4 * time.Second, What: "the alert", Logf: logf,
	})
}
