"""A recipe's web app on the fake GPU host: ComfyUI (`comfy --workspace=DIR launch -- --listen H
--port P`) or the Whisper ASR web service (`whisper-asr-webservice --host H --port P`). Like the
real ones it binds exactly the address it is given (an occupied port is `OSError: [Errno 98]
Address already in use`, exit 1), answers only after its first boot (`FAKE_WEBAPP_BOOT_S`, 1 s by
default: nothing listens until then), serves its readiness path (`/system_stats`, `/docs`) and 404
elsewhere. Each request is logged to `$FAKEGPU_STATE/webapp-requests.log` (app, method, path,
peer). Failures: `FAKE_WEBAPP_FAIL=1` exits at once as a missing dependency does;
`FAKE_WEBAPP_BIND_ALL=1` ignores the address and binds 0.0.0.0 (an app that does not honour its
flag)."""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def usage(msg):
    sys.stderr.write(msg + "\n")
    sys.exit(2)


def parse(app, argv):
    if app == "comfy":
        # comfy --workspace=DIR launch -- --listen H --port P
        if not argv or not argv[0].startswith("--workspace="):
            usage("comfy: expected --workspace=DIR")
        ws = argv[0].split("=", 1)[1]
        if not os.path.isdir(ws) or argv[1:3] != ["launch", "--"]:
            usage("comfy: expected --workspace=DIR launch -- ARGS (workspace %r)" % ws)
        rest, host_flag = argv[3:], "--listen"
    else:
        rest, host_flag = argv, "--host"
    host, port = "127.0.0.1", None
    i = 0
    while i < len(rest):
        if rest[i] == host_flag and i + 1 < len(rest):
            host = rest[i + 1]
            i += 2
        elif rest[i] == "--port" and i + 1 < len(rest):
            port = int(rest[i + 1])
            i += 2
        else:
            usage("%s: unknown argument %r" % (app, rest[i]))
    if port is None:
        usage("%s: --port is required" % app)
    return host, port


def main():
    app = os.path.basename(sys.argv[1])
    if os.environ.get("FAKE_WEBAPP_FAIL") == "1":
        sys.stderr.write("ModuleNotFoundError: No module named 'torch'\n")
        sys.exit(1)
    host, port = parse(app, sys.argv[2:])
    if os.environ.get("FAKE_WEBAPP_BIND_ALL") == "1":
        host = "0.0.0.0"
    ready = "/system_stats" if app == "comfy" else "/docs"
    log = os.path.join(os.environ.get("FAKEGPU_STATE", "/tmp"), "webapp-requests.log")
    time.sleep(float(os.environ.get("FAKE_WEBAPP_BOOT_S", "1")))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            with open(log, "a") as f:
                f.write("%s GET %s %s\n" % (app, self.path, self.client_address[0]))
            path = self.path.split("?", 1)[0]
            if path == ready:
                if app == "comfy":
                    body = json.dumps({"system": {"os": "posix", "comfyui_version": "fake"},
                                       "devices": [{"name": "cuda:0 NVIDIA H100 80GB HBM3", "type": "cuda"}]}).encode()
                    ctype = "application/json"
                else:
                    body = b"<!DOCTYPE html><title>Whisper Asr Webservice - Swagger UI</title>"
                    ctype = "text/html"
                self.send_response(200)
            elif path == "/":
                body, ctype = ("<!DOCTYPE html><title>%s</title>" % app).encode(), "text/html"
                self.send_response(200)
            else:
                body, ctype = b'{"detail":"Not Found"}', "application/json"
                self.send_response(404)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    try:
        srv = ThreadingHTTPServer((host, port), Handler)
    except OSError as e:
        sys.stderr.write("OSError: %s\n" % e)
        sys.exit(1)
    sys.stderr.write("listening on %s:%d\n" % (host, port))
    sys.stderr.flush()
    srv.serve_forever()


if __name__ == "__main__":
    main()
