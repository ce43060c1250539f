#!/usr/bin/env python3
"""Runs an xrun job image on the GPU host's daemon by the Docker API with host
settings that xrun does not offer, to find which one a behaviour depends on;
prints the runner's crash, status and `compiled` timing lines.

  run-image.py IMAGE NAME [seccomp=unconfined] [shm=GIB] [root]

Like an xrun job: GPU 0 through the nvidia runtime, 1 GiB of /dev/shm, uid
65532 with USER/LOGNAME; unlike one: no capability drop, no pids or memory
limit (each option changes one more thing)."""
import http.client, json, socket, sys, time
class C(http.client.HTTPConnection):
    def __init__(s): super().__init__("localhost", timeout=900)
    def connect(s):
        s.sock = socket.socket(socket.AF_UNIX); s.sock.connect("/var/run/docker.sock")
def call(m, path, body=None):
    c = C(); c.request(m, path, body=json.dumps(body) if body is not None else None, headers={"Content-Type": "application/json"})
    r = c.getresponse(); d = r.read(); return r.status, d
img, name = sys.argv[1], sys.argv[2]
opts = sys.argv[3:]
hc = {"Runtime": "nvidia", "ShmSize": 1 << 30, "DeviceRequests": [{"Driver": "nvidia", "DeviceIDs": ["0"], "Capabilities": [["gpu"]]}]}
env = ["XRUN_MODE=gpu", "XRUN_JOB_ID=probe"]
user = "65532:65532"
for o in opts:
    if o.startswith("seccomp="): hc["SecurityOpt"] = [o]
    if o.startswith("shm="): hc["ShmSize"] = int(o[4:]) << 30
    if o == "root": user = ""
if user: env += ["USER=xrun", "LOGNAME=xrun"]
st, d = call("POST", "/containers/create?name=" + name, {"Image": img, "Env": env, "User": user, "HostConfig": hc})
cid = json.loads(d)["Id"]
t0 = time.time(); call("POST", "/containers/%s/start" % cid)
st, d = call("POST", "/containers/%s/wait" % cid)
st, logs = call("GET", "/containers/%s/logs?stdout=1&stderr=1" % cid)
lines = [l for l in logs.decode("latin1").splitlines() if "crashed" in l or "status:" in l or "compiled: median" in l]
print(name, opts, "exit", json.loads(d)["StatusCode"], "in %.0fs" % (time.time() - t0))
for l in lines: print("  ", l[8:][:150])
