package store

import "github.com/xrun-dev/xrun/result"

// Job statuses. A finished job ends in one of the runner's statuses
// (result.StatusSucceeded, StatusFailed, StatusCriteriaFailed,
// StatusCancelled, StatusTimeout), the same word its results.json in the
// store says; the ones below are the client's alone and never final
// except StatusRemoved.
const (
	StatusCreated = "created"
	StatusRunning = "running"
	// StatusPending is a job its cluster's scheduler holds until a node
	// can take it (the backend's state says why).
	StatusPending = "pending"
	// StatusUnknown is a job whose host could not be asked.
	StatusUnknown = "unknown"
	// StatusRemoved is a job whose container went before its results
	// were fetched.
	StatusRemoved = "removed"
	// StatusUnreadable is a job whose record cannot be read (Entries).
	StatusUnreadable = "unreadable"
)

// Final reports whether a job status will not change any more.
func Final(status string) bool {
	switch status {
	case result.StatusSucceeded, result.StatusFailed, result.StatusCriteriaFailed,
		result.StatusCancelled, result.StatusTimeout, StatusRemoved:
		return true
	}
	return false
}
