package backend

import (
	"archive/tar"
	"strings"
)

// WriteSecret writes data to tw as the file at path, a path under /xrun
// (the directory a job's tar is unpacked at), owned by root and readable
// by root alone: the runner reads it before it runs the experiment's code
// as contract.JobUser, which cannot.
func WriteSecret(tw *tar.Writer, path string, data []byte) error {
	h := &tar.Header{Name: strings.TrimPrefix(path, "/xrun/"), Mode: 0o400, Size: int64(len(data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}
