package enginetest

import (
	"encoding/json"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/result"
)

// ResultsJSON is a results.json of experiment with status, as a fake
// runner writes it.
func ResultsJSON(experiment, status string) string {
	r := result.Results{SchemaVersion: result.SchemaVersion, Experiment: experiment, Status: status,
		Success: status == result.StatusSucceeded, CreatedAt: time.Unix(0, 0).UTC()}
	data, err := json.Marshal(r)
	if err != nil {
		panic(err) // a struct of plain values
	}
	return string(data)
}

// Succeed is a runner of experiment that logs a line and three progress
// records, writes its results.json and runner.log, and succeeds.
func Succeed(experiment string) func(engine.ContainerSpec) Run {
	return func(engine.ContainerSpec) Run {
		return Run{Logs: "runner says hi\n" +
			"10:00:01 progress case=1/2 phase=check elapsed=1.0 case_start=1.0 done=0.0\n" +
			"10:00:02 progress case=1/2 phase=check elapsed=2.0 case_start=1.0 done=0.0\n" +
			"10:00:03 progress case=1/2 phase=time impl=a elapsed=3.0 case_start=1.0 done=0.0\n", Files: map[string]string{
			"results.json": ResultsJSON(experiment, result.StatusSucceeded), "runner.log": "log\n"}}
	}
}
