"""A recipe's web app on the fake GPU host: ComfyUI (`comfy --workspace=DIR launch -- --listen H
--port P`) or the Whisper ASR web service (`whisper-asr-webservice --host H --port P`). Like the
real ones it binds exactly the address it is given (an occupied port is `OSError: [Errno 98]
Address already in use`, exit 1), answers only after its first boot (`FAKE_WEBAPP_BOOT_S`, 1 s by
default: nothing listens until then), serves its readiness path (`/system_stats`, `/docs`) and 404
elsewhere. Each request is logged to `$FAKEGPU_STATE/webapp-requests.log` (app, method, path,
peer). Failures: `FAKE_WEBAPP_FAIL=1` exits at once as a missing dependency does;
`FAKE_WEBAPP_BIND_ALL=1` ignores the address and binds 0.0.0.0 (an app that does not honour its
flag).

The Whisper service also answers `POST /asr?task=transcribe&output=FMT[&language=L]` with the
multipart field `audio_file`, as the real one (ahmetoner/whisper-asr-webservice, app/webservice.py)
does in the ways that matter to a client: the answer comes only once the whole file is "transcribed"
(`FAKE_ASR_S_PER_MB` seconds per MB of audio, 0 by default, plus the seconds in
`$FAKEGPU_STATE/asr-delay` if that file exists), it is streamed
(`Transfer-Encoding: chunked`), a file that does not decode (here: one starting with `NOTAUDIO`) is
`500 Internal Server Error` with a plain-text body, so is a file name that is not Latin-1 (the
real one echoes it in a header Starlette writes as Latin-1), an `output` outside txt/vtt/srt/tsv/json or a
missing `audio_file` is FastAPI's `422` JSON. A number N in `$FAKEGPU_STATE/asr-cut` closes the
connection after N bytes of the answer (a link that dies mid-answer). (The two files are read on
every request: a test changes them while the app runs.) The transcript names the file, its size
and its SHA-256, so a test can tell which audio it came from; each is logged to
`$FAKEGPU_STATE/asr.log`."""

import hashlib
import json
import os
import re
import sys
import time
from urllib.parse import parse_qs, urlsplit
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

        def answer(self, status, body, ctype):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            with open(log, "a") as f:
                f.write("%s POST %s %s\n" % (app, self.path, self.client_address[0]))
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            if app == "comfy" or url.path != "/asr":
                return self.answer(404, b'{"detail":"Not Found"}', "application/json")
            q = {k: v[-1] for k, v in parse_qs(url.query).items()}
            output = q.get("output", "txt")
            if output not in ("txt", "vtt", "srt", "tsv", "json"):
                detail = [{"type": "enum", "loc": ["query", "output"], "msg": "Input should be 'txt', 'vtt', 'srt', 'tsv' or 'json'"}]
                return self.answer(422, json.dumps({"detail": detail}).encode(), "application/json")
            m = re.search(r"boundary=([^;]+)", self.headers.get("Content-Type", ""))
            audio, name = None, None
            if m:
                for part in body.split(b"--" + m.group(1).strip().encode()):
                    head, _, data = part.partition(b"\r\n\r\n")
                    if b'name="audio_file"' in head:
                        fn = re.search(rb'filename="([^"]*)"', head)
                        name = fn.group(1).decode("utf-8", "replace") if fn else "audio"
                        audio = data[:-2] if data.endswith(b"\r\n") else data
            if audio is None:
                detail = [{"type": "missing", "loc": ["body", "audio_file"], "msg": "Field required"}]
                return self.answer(422, json.dumps({"detail": detail}).encode(), "application/json")
            state = os.environ.get("FAKEGPU_STATE", "/tmp")

            def knob(name):
                try:
                    with open(os.path.join(state, name)) as f:
                        return f.read().strip()
                except OSError:
                    return None

            time.sleep(float(knob("asr-delay") or 0)
                       + float(os.environ.get("FAKE_ASR_S_PER_MB", "0")) * len(audio) / 1e6)
            if audio.startswith(b"NOTAUDIO"):
                return self.answer(500, b"Internal Server Error", "text/plain; charset=utf-8")
            sha = hashlib.sha256(audio).hexdigest()
            with open(os.path.join(state, "asr.log"), "a") as f:
                f.write("%s %d %s %s %s\n" % (name, len(audio), sha, output, q.get("language", "-")))
            text = "transcript of %s (%d bytes, sha256 %s, language %s)" % (name, len(audio), sha, q.get("language", "auto"))
            if output == "srt":
                text = "1\n00:00:00,000 --> 00:00:02,000\n%s\n" % text
            elif output == "vtt":
                text = "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\n%s\n" % text
            elif output == "json":
                text = json.dumps({"text": text, "segments": [], "language": q.get("language", "en")})
            elif output == "tsv":
                text = "start\tend\ttext\n0\t2000\t%s\n" % text
            else:
                text += "\n"
            data = text.encode()
            disposition = 'attachment; filename="%s.%s"' % (name, output)
            try:
                disposition.encode("latin-1")
            except UnicodeEncodeError:
                # Starlette writes headers as Latin-1: the real service fails here, after the work.
                return self.answer(500, b"Internal Server Error", "text/plain; charset=utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Asr-Engine", os.environ.get("ASR_ENGINE", "openai_whisper"))
            self.send_header("Content-Disposition", disposition)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            out = b""
            for i in range(0, len(data), 16):
                piece = data[i:i + 16]
                out += b"%x\r\n%s\r\n" % (len(piece), piece)
            out += b"0\r\n\r\n"
            cut = knob("asr-cut")
            if cut:
                self.wfile.write(out[:int(cut)])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(out)

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
