package cli

import (
	"strings"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/server"
	"github.com/xrun-dev/xrun/contract"
)

// configPost is where a submitted job's runner posts its results when
// this shell sets no XRUN_POST_URL (which wins): the server: of xrun's
// config, its results endpoint and post token; nil without one. The
// token file is read only then, so that a shell that points elsewhere
// does not depend on it.
func (a *App) configPost() (*job.PostTarget, error) {
	if a.getenv(contract.EnvPostURL) != "" {
		return nil, nil
	}
	path := connect.ConfigPath(a.getenv)
	s, err := connect.LoadServer(path)
	if err != nil {
		return nil, contract.BadInput(err)
	}
	if s == nil || !s.HasPostToken() {
		return nil, nil // none, or a section of a machine that only reads
	}
	token, err := s.PostToken(path, a.getenv)
	if err != nil {
		return nil, contract.BadInput(err)
	}
	return &job.PostTarget{URL: postURL(s.URL), Token: token}, nil
}

// postURL is the results endpoint of the server at base; a base given
// with the endpoint already is taken as it is.
func postURL(base string) string {
	base = strings.TrimSuffix(base, "/")
	return strings.TrimSuffix(base, server.ResultsPath) + server.ResultsPath
}
