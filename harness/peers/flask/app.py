# One instance of the Flask-Limiter peer of rlbench (harness/peers): a Flask
# app whose limited routes are decorated with Flask-Limiter's limit(), on the
# limits package's Redis storage, every instance sharing one Redis, served by
# waitress. Configured by the JSON in RLBENCH_PEER_CONFIG (peers.ProcConfig):
# fixed_window routes run the fixed-window strategy, sliding_window_log routes
# the moving-window strategy (one strategy per Limiter, so one per app). The
# failure mode maps to Flask-Limiter's documented options: fallback to
# in_memory_fallback_enabled, open to swallow_errors, closed to neither (a
# storage error is a 500). Prints "listening on HOST:PORT" once it serves.
import json
import os
import socket
import sys

from flask import Flask, Response, request
from flask_limiter import Limiter
import waitress

cfg = json.loads(os.environ["RLBENCH_PEER_CONFIG"])
strategies = {"fixed_window": "fixed-window", "sliding_window_log": "moving-window"}
algorithms = {rt["algorithm"] for rt in cfg["routes"] if rt.get("limit")}
if len(algorithms) != 1:
    sys.exit("one algorithm for every limited route, not %s" % sorted(algorithms))
mode = cfg.get("failureMode", "")
options = {}
if cfg.get("storeTimeoutMs"):
    options = {"socket_timeout": cfg["storeTimeoutMs"] / 1000, "socket_connect_timeout": cfg["storeTimeoutMs"] / 1000}

app = Flask(__name__)
header = cfg["header"]
limiter = Limiter(
    lambda: request.headers.get(header, ""),
    app=app,
    storage_uri=cfg["redisURL"],
    storage_options=options,
    strategy=strategies[algorithms.pop()],
    headers_enabled=True,
    swallow_errors=(mode == "open"),
    in_memory_fallback_enabled=(mode == "fallback"),
)

for i, rt in enumerate(cfg["routes"]):
    def view():
        return Response("ok\n", mimetype="text/plain")
    view.__name__ = "route%d" % i
    if rt.get("limit"):
        view = limiter.limit("%d per %d second" % (rt["limit"], rt["windowMs"] // 1000))(view)
    app.add_url_rule(rt["path"], endpoint="route%d" % i, view_func=view, methods=[rt["method"]])

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", cfg.get("port", 0)))
sock.listen(1024)
host, port = sock.getsockname()
print("listening on %s:%d" % (host, port), flush=True)
waitress.serve(app, sockets=[sock], threads=16, connection_limit=2000, _quiet=True)
