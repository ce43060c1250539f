package store

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Job is one submitted job as the client recorded it.
type Job struct {
	ID            string `json:"id"`
	Host          string `json:"host"`
	ContainerID   string `json:"container_id,omitempty"`
	ContainerName string `json:"container_name,omitempty"`
	Experiment    string `json:"experiment"`
	ExperimentDir string `json:"experiment_dir,omitempty"`
	ImageRef      string `json:"image_ref,omitempty"`
	ImageID       string `json:"image_id,omitempty"`
	SpecHash      string `json:"spec_hash,omitempty"`
	GPUs          string `json:"gpus"`
	// CPUs is the host CPUs the job runs on ("2-3"; "": all of them).
	CPUs    string    `json:"cpus,omitempty"`
	Mode    string    `json:"mode"` // gpu or cpu
	Timeout string    `json:"timeout,omitempty"`
	Created time.Time `json:"created"`
	// Started is when a standby container was handed the job (its
	// container started before the job); nil for any other job.
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	Status   string     `json:"status"`
	ExitCode *int       `json:"exit_code,omitempty"`
	// OOMKilled is set when the kernel's OOM killer ended a process of
	// the job's container; Status says how the job ended all the same.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// StoppedBy is result.StatusCancelled or result.StatusTimeout when a
	// client stopped the job, recorded before the stop (FinalStatus).
	StoppedBy string `json:"stopped_by,omitempty"`
	Error     string `json:"error,omitempty"`
	// ResultsSHA256 is the SHA-256 (hex) of the store's results.json as
	// recorded when the job ended and its results were collected; from
	// then on the results are read from the store alone, and checked
	// against it (CheckResults). Empty in older records and for a job
	// without results: nothing to check.
	ResultsSHA256 string `json:"results_sha256,omitempty"`
	// Creator is the xrun process that creates the job (Creator()):
	// a job still created whose submitter is gone will never start.
	Creator string `json:"creator,omitempty"`
	// Owner is the user who submitted the job (CurrentUser).
	Owner string `json:"owner,omitempty"`
	// Submit is how the job was submitted, beside what the fields above
	// say (directory, host, GPUs, mode, timeout), so that it can be rerun
	// the same way (xrun regress --confirm).
	Submit *SubmitArgs `json:"submit,omitempty"`
	// Split is the part of its sweep the job runs ("2/4",
	// contract.EnvSplit), and SplitOf the job its parts' results are
	// gathered into (xrun submit --split); both "" for a job that runs a
	// whole sweep.
	Split   string `json:"split,omitempty"`
	SplitOf string `json:"split_of,omitempty"`
	// Parts are the jobs a gathered job's results come from, in part
	// order: such a job ran nowhere itself.
	Parts []string `json:"parts,omitempty"`
}

// SubmitArgs are the submit options a rerun of a job repeats.
type SubmitArgs struct {
	Base string `json:"base,omitempty"`
	// CPUs repeats --cpus.
	CPUs int `json:"cpus,omitempty"`
	// Env are the names of the --env variables, never their values: a
	// rerun reads them from its own environment again.
	Env     []string `json:"env,omitempty"`
	Labels  []string `json:"labels,omitempty"`
	Root    bool     `json:"root,omitempty"`
	Network string   `json:"network,omitempty"`
	// NoStandby and NoCacheVolume repeat --no-standby and
	// --no-cache-volume.
	NoStandby     bool `json:"no_standby,omitempty"`
	NoCacheVolume bool `json:"no_cache_volume,omitempty"`
	// PendingLimit repeats a cluster's --pending-limit.
	PendingLimit time.Duration `json:"pending_limit,omitempty"`
	// Registry and PullSecret repeat where a cluster's job image was
	// pushed and the secret its pods pulled it with (--registry,
	// --pull-secret; the secret's name, never its content).
	Registry   string `json:"registry,omitempty"`
	PullSecret string `json:"pull_secret,omitempty"`
	// Place repeats the options of the place the job ran on, as its
	// backend records them (client/connect reads them; the store does
	// not look inside). Earlier versions kept them under the backend's
	// own name: UnmarshalJSON moves them here.
	Place json.RawMessage `json:"place,omitempty"`
}

// UnmarshalJSON reads the arguments. A record of an earlier version keeps
// its place's options as an object under the backend's name, a field
// this version does not know: with no Place, that object is the Place
// (the record's Host says whose options they are).
func (a *SubmitArgs) UnmarshalJSON(data []byte) error {
	type plain SubmitArgs
	if err := json.Unmarshal(data, (*plain)(a)); err != nil || len(a.Place) > 0 {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	known := submitFields()
	for name, v := range fields {
		if !known[name] && len(v) > 0 && v[0] == '{' {
			a.Place = v
		}
	}
	return nil
}

// submitFields are the JSON names of SubmitArgs' fields.
var submitFields = sync.OnceValue(func() map[string]bool {
	known := map[string]bool{}
	t := reflect.TypeFor[SubmitArgs]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	return known
})
