package cli

import "github.com/xrun-dev/xrun/client/exit"

// ExitError carries the process exit code for an error (client/exit).
type ExitError = exit.Error

// Exit codes of xrun (client/exit).
const (
	ExitCriteriaFailed = exit.CriteriaFailed
	ExitFailed         = exit.Failed
	ExitUsage          = exit.Usage
	ExitInfra          = exit.Infra
	ExitTimeout        = exit.Timeout
	ExitInterrupted    = exit.Interrupted
	ExitRegressed      = exit.Regressed // xrun regress: a confirmed regression
)
