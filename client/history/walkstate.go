package history

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/xrun-dev/xrun/client/regress"
)

// The rules' state kept with the history (the walk_states table): for a
// group of series, each series' regress.State at one of the group's runs,
// a checkpoint. A reader of a group's last runs (xrun history's table,
// regress of the latest run) judges them from there, as a walk from the
// group's first run would: a series of 10^6 timings is read from its last
// few hundred runs, not from its first (docs/performance.md, "One series
// of 10^6 timings").
//
//   - A walk that judged more than 2 x checkpointKeep runs of a group past
//     its checkpoint (or from the group's start) writes a new checkpoint
//     checkpointKeep runs before the last one it read.
//   - A checkpoint serves only a walk under the same rules (walkRuleKey),
//     whose cut run and shown points all come after it.
//   - What a checkpoint rests on can change. An import of a run at or before
//     it, or one that replaces a run, drops it. So do a run removed and a
//     change point recorded, each for its whole experiment.
//   - Each such change also moves its experiment's epoch (walk_epochs). A walk
//     writes the checkpoints of an experiment only if its epoch has not
//     moved since the walk began to read, so that a walk never writes
//     a checkpoint over a change it did not see.

// checkpointKeep is how many of a group's runs a walk leaves after the
// checkpoint it writes: the table's --last and a regress of one of the
// latest runs read fewer.
var checkpointKeep = 100

// walkStateVersion is the layout and meaning of a kept state: a change
// to the rules' code that changes what a state holds, or what a walk
// makes of it, must change it, and the states kept before are then
// ignored.
const walkStateVersion = 1

// walkRuleKey names the rules a state was made under.
func walkRuleKey(ru regress.Rule) string {
	r, _ := json.Marshal(ru)
	c, _ := json.Marshal(regress.DefaultClocks())
	return fmt.Sprintf("v%d %s %s", walkStateVersion, r, c)
}

// runPos is where a point lies in its series' time order: its run's time,
// then its run's id.
type runPos struct{ at, run int64 }

func posOf(p *Point) runPos { return runPos{p.Date.UnixNano(), p.RunID} }

func (a runPos) before(b runPos) bool { return a.at < b.at || (a.at == b.at && a.run < b.run) }

// checkpoint is a group's state after its points at or before pos.
type checkpoint struct {
	experiment string
	pos        runPos
	series     map[int64]*seriesState
}

// seriesState is one series' state at a checkpoint.
type seriesState struct {
	regress.State
	// LastAt is the time of the series' last point at or before the
	// checkpoint: the change points after it are still to apply.
	LastAt int64 `json:"last_at,omitempty"`
	// Points is how many points the series has at or before the
	// checkpoint: a table of its last runs says how many it leaves out.
	Points int `json:"points,omitempty"`
}

// stateOf is a copy of the state of series id at cp (a new one when cp
// holds none), and the time of its last point there (0: none).
func (cp *checkpoint) stateOf(id int64) (*regress.State, int64) {
	if cp == nil || cp.series[id] == nil {
		return &regress.State{}, 0
	}
	// A copy through JSON, as it is stored: the walk's changes to it must
	// not reach the checkpoint.
	data, _ := json.Marshal(cp.series[id].State)
	st := &regress.State{}
	json.Unmarshal(data, st)
	return st, cp.series[id].LastAt
}

// loadCheckpoints reads the checkpoints of the groups wanted under ru,
// and the epoch of every experiment (0: none recorded yet).
func (s *Store) loadCheckpoints(ctx context.Context, ru regress.Rule, wanted map[string]bool) (map[string]*checkpoint, map[string]int64, error) {
	epochs := map[string]int64{}
	rows, err := s.db.QueryContext(ctx, "SELECT experiment, epoch FROM walk_epochs")
	if err != nil {
		return nil, nil, fmt.Errorf("read results history: %w", err)
	}
	for rows.Next() {
		var e string
		var n int64
		if err := rows.Scan(&e, &n); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read results history: %w", err)
		}
		epochs[e] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read results history: %w", err)
	}
	cps := map[string]*checkpoint{}
	rows, err = s.db.QueryContext(ctx, "SELECT grp, experiment, at, run_id, state FROM walk_states WHERE rule = ?", walkRuleKey(ru))
	if err != nil {
		return nil, nil, fmt.Errorf("read results history: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g, state string
		cp := &checkpoint{}
		if err := rows.Scan(&g, &cp.experiment, &cp.pos.at, &cp.pos.run, &state); err != nil {
			return nil, nil, fmt.Errorf("read results history: %w", err)
		}
		if !wanted[g] {
			continue
		}
		var byID map[string]*seriesState
		if err := json.Unmarshal([]byte(state), &byID); err != nil {
			continue // unreadable: the walk reads the group from its start and writes it again
		}
		cp.series = map[int64]*seriesState{}
		for k, v := range byID {
			id, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				continue
			}
			cp.series[id] = v
		}
		cps[g] = cp
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read results history: %w", err)
	}
	return cps, epochs, nil
}

// newCheckpoint is a checkpoint to write: group's states at pos.
type newCheckpoint struct {
	group string
	cp    *checkpoint
}

// saveCheckpoints writes the walk's new checkpoints, each experiment's
// only where its epoch is still the one the walk began with (epochs).
func (s *Store) saveCheckpoints(ctx context.Context, ru regress.Rule, cps []newCheckpoint, epochs map[string]int64) error {
	if len(cps) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keep the rules' state in the results history: %w", err)
	}
	defer tx.Rollback()
	still := map[string]bool{}
	key := walkRuleKey(ru)
	for _, n := range cps {
		e := n.cp.experiment
		if _, checked := still[e]; !checked {
			if _, err := tx.Exec("INSERT INTO walk_epochs (experiment, epoch) VALUES (?, 0) ON CONFLICT(experiment) DO NOTHING", e); err != nil {
				return fmt.Errorf("keep the rules' state in the results history: %w", err)
			}
			// Matching the row also locks it on PostgreSQL until the
			// commit: a change that moves the epoch waits for it.
			res, err := tx.Exec("UPDATE walk_epochs SET epoch = epoch WHERE experiment = ? AND epoch = ?", e, epochs[e])
			if err != nil {
				return fmt.Errorf("keep the rules' state in the results history: %w", err)
			}
			n, _ := res.RowsAffected()
			still[e] = n == 1
		}
		if !still[e] {
			continue // the history changed while the walk read it
		}
		byID := make(map[string]*seriesState, len(n.cp.series))
		for id, st := range n.cp.series {
			byID[strconv.FormatInt(id, 10)] = st
		}
		data, err := json.Marshal(byID)
		if err != nil {
			return fmt.Errorf("keep the rules' state in the results history: %w", err)
		}
		if _, err := tx.Exec(`INSERT INTO walk_states (grp, experiment, rule, at, run_id, state) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT(grp) DO UPDATE SET experiment = excluded.experiment, rule = excluded.rule, at = excluded.at,
			run_id = excluded.run_id, state = excluded.state`, n.group, e, key, n.cp.pos.at, n.cp.pos.run, string(data)); err != nil {
			return fmt.Errorf("keep the rules' state in the results history: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keep the rules' state in the results history: %w", err)
	}
	return nil
}

// forgetStates drops experiment's checkpoints at or after from (the
// time, in ns: 0 all of them) and moves its epoch, in t: a change to what
// they rest on.
func forgetStates(t *tx, experiment string, from int64) error {
	if _, err := t.Exec(`INSERT INTO walk_epochs (experiment, epoch) VALUES (?, 1)
		ON CONFLICT(experiment) DO UPDATE SET epoch = walk_epochs.epoch + 1`, experiment); err != nil {
		return err
	}
	_, err := t.Exec("DELETE FROM walk_states WHERE experiment = ? AND at >= ?", experiment, from)
	return err
}
