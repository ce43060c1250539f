package engine

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/docker/go-units"
	"github.com/moby/moby/api/types/jsonstream"
)

// PullProgress is where a pull stands: the layers the daemon has named so
// far, how many of them are on the host, and the bytes downloaded of the
// layers whose size it has said.
type PullProgress struct {
	Layers, Done int
	Got, Size    int64
}

// String is "3 of 12 layers, 120MB of 2.1GB".
func (p PullProgress) String() string {
	s := fmt.Sprintf("%d of %d layers", p.Done, p.Layers)
	if p.Size > 0 {
		s += fmt.Sprintf(", %s of %s", units.HumanSize(float64(p.Got)), units.HumanSize(float64(p.Size)))
	}
	return s
}

// layerState is one layer's part of a pull.
type layerState struct {
	done      bool
	got, size int64
}

// decodePull reads the daemon's pull messages, one per layer step ("Pulling
// fs layer", "Downloading" with its bytes, "Download complete",
// "Extracting", "Pull complete", "Already exists"), and tells progress the
// pull's state after each: a line per message would be thousands for a
// CUDA base.
func decodePull(r io.Reader, progress func(PullProgress)) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	layers := map[string]*layerState{}
	var order []string
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the pull's output: %w", err)
		}
		if m.Error != nil {
			return errors.New(streamError(m.Error))
		}
		// Messages without a layer id are the image's own ("Pulling from
		// library/x", "Digest: ...", "Status: Downloaded newer image").
		if m.ID == "" || !isLayerStatus(m.Status) {
			continue
		}
		l := layers[m.ID]
		if l == nil {
			l = &layerState{}
			layers[m.ID] = l
			order = append(order, m.ID)
		}
		switch {
		case strings.HasPrefix(m.Status, "Downloading") && m.Progress != nil:
			l.got = m.Progress.Current
			if m.Progress.Total > 0 {
				l.size = m.Progress.Total
			}
		case m.Status == "Download complete" || m.Status == "Verifying Checksum":
			if l.size > 0 {
				l.got = l.size
			}
		case m.Status == "Pull complete" || m.Status == "Already exists":
			l.done = true
			if l.size > 0 {
				l.got = l.size
			}
		}
		if progress != nil {
			var p PullProgress
			for _, id := range order {
				l := layers[id]
				p.Layers++
				if l.done {
					p.Done++
				}
				p.Got += l.got
				p.Size += l.size
			}
			progress(p)
		}
	}
}

// isLayerStatus says a status with an id is about a layer: the daemon also
// sends the tag's own line with the tag as its id ("latest: Pulling from x").
func isLayerStatus(status string) bool {
	return !strings.HasPrefix(status, "Pulling from ")
}
