#!/usr/bin/env python3
"""The two Docker Engine API calls the GPU-host scripts need, for machines
without the docker CLI (standard library only).

  dockerapi.py ping
      exit 0 when the daemon answers /_ping.
  dockerapi.py import REF [CHANGE...] < rootfs.tar
      POST /images/create?fromSrc=- : the tar on stdin becomes image REF, with
      Dockerfile instructions (ENV, LABEL, CMD...) applied as `docker import
      --change` does. Prints the image id.

The socket is DOCKER_SOCK, else /var/run/docker.sock.
"""
import http.client
import json
import os
import socket
import sys
import urllib.parse

SOCK = os.environ.get("DOCKER_SOCK", "/var/run/docker.sock")


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=None):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if self.timeout:
            self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def ping():
    try:
        c = UnixConnection(SOCK, timeout=3)
        c.request("GET", "/_ping")
        return 0 if c.getresponse().status == 200 else 1
    except OSError:
        return 1


def chunks(f, size=1 << 20):
    while True:
        b = f.read(size)
        if not b:
            return
        yield b


def import_image(ref, changes):
    repo, _, tag = ref.rpartition(":") if ":" in ref.split("/")[-1] else (ref, "", "latest")
    q = [("fromSrc", "-"), ("repo", repo), ("tag", tag)] + [("changes", c) for c in changes]
    c = UnixConnection(SOCK)
    c.request("POST", "/images/create?" + urllib.parse.urlencode(q), body=chunks(sys.stdin.buffer),
              headers={"Content-Type": "application/x-tar"}, encode_chunked=True)
    r = c.getresponse()
    image_id = None
    for line in r:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if "error" in msg:
            print("import %s: %s" % (ref, msg["error"]), file=sys.stderr)
            return 1
        if msg.get("status", "").startswith("sha256:"):
            image_id = msg["status"]
    if r.status != 200 or not image_id:
        print("import %s: HTTP %d" % (ref, r.status), file=sys.stderr)
        return 1
    print(image_id)
    return 0


def main(argv):
    if argv[:1] == ["ping"]:
        return ping()
    if len(argv) >= 2 and argv[0] == "import":
        return import_image(argv[1], argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
