package backend

import (
	"errors"
	"flag"
	"strings"
	"time"
)

// Option is a command-line option a backend declares for the place it
// runs jobs on, as Nomad's drivers declare their configuration: the
// command line shows it as a flag (--Name, its aliases and environment
// variables, Usage and the Default its help names) and hands what it is
// given to Value, or sets Switch for a flag that takes no value. The
// backend owns the option's name, wording and meaning; client/connect
// gathers each place's (the catalog), and the command line only lists
// them.
type Option struct {
	Name    string
	Aliases []string
	Env     []string
	Usage   string
	Default string
	// Switch is set by a flag without a value; else Value takes the
	// flag's value (each time it is given, for a repeatable option).
	Switch *bool
	Value  flag.Value
}

// StringValue is an option's value kept in *s.
func StringValue(s *string) flag.Value { return (*stringValue)(s) }

type stringValue string

func (s *stringValue) Set(v string) error { *s = stringValue(v); return nil }
func (s *stringValue) String() string {
	if s == nil {
		return ""
	}
	return string(*s)
}

// ListValue is a repeatable option whose values are appended to *l, each
// kept whole: a comma belongs to the value (--sbatch --nodelist=n1,n2).
func ListValue(l *[]string) flag.Value { return (*listValue)(l) }

type listValue []string

func (l *listValue) Set(v string) error { *l = append(*l, v); return nil }
func (l *listValue) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ", ")
}

// DurationValue is an option's duration, kept in *d.
func DurationValue(d *time.Duration) flag.Value { return (*durationValue)(d) }

type durationValue time.Duration

func (d *durationValue) Set(v string) error {
	t, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("not a duration (30s, 10m, 1h30m)")
	}
	*d = durationValue(t)
	return nil
}

func (d *durationValue) String() string {
	if d == nil {
		return ""
	}
	return time.Duration(*d).String()
}
