"""Fake `ollama` for the tests: `ollama --version`, and `ollama serve` speaking a small, documented
part of Ollama's HTTP API (docs/api.md of ollama/ollama) on $OLLAMA_HOST (default 127.0.0.1:11434):
GET /api/version, POST /api/pull (streamed NDJSON: status, digest, total, completed), POST
/api/generate (streamed or not), GET /api/ps. Pulled models are remembered in
$FAKEGPU_STATE/ollama-models; FAKE_OLLAMA_LAYER_BYTES sets the one layer's size; a model whose
name starts with "missing" does not exist. Streams use HTTP/1.1 chunked encoding, as the real
server's do."""
import hashlib, json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "0.5.7"
STATE = os.environ.get("FAKEGPU_STATE", ".")
MODELS = os.path.join(STATE, "ollama-models")
loaded = {}


def pulled():
    try:
        return set(open(MODELS).read().split())
    except OSError:
        return set()


def digest(name):
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, code, obj):
        body = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self):
        if self.path == "/api/version":
            return self.send_json(200, {"version": VERSION})
        if self.path == "/api/ps":
            return self.send_json(200, {"models": list(loaded.values())})
        self.send_json(404, {"error": "404 page not found"})

    def do_POST(self):
        req = self.body()
        name = req.get("model") or req.get("name") or ""
        stream = req.get("stream", True)
        if self.path == "/api/pull":
            if name.startswith("missing"):
                return self.send_json(500, {"error": "pull model manifest: file does not exist"})
            total = int(os.environ.get("FAKE_OLLAMA_LAYER_BYTES", "4000000"))
            d = digest(name)
            self.start_stream()
            self.chunk({"status": "pulling manifest"})
            for i in range(6):
                self.chunk({"status": "pulling " + d[7:19], "digest": d, "total": total, "completed": total * i // 5})
                time.sleep(float(os.environ.get("FAKE_OLLAMA_STEP_S", "0.05")))
            self.chunk({"status": "verifying sha256 digest"})
            self.chunk({"status": "writing manifest"})
            with open(MODELS, "a") as f:
                f.write(name + "\n")
            self.chunk({"status": "success"})
            return self.end_stream()
        if self.path == "/api/generate":
            if name not in pulled():
                return self.send_json(404, {"error": 'model "%s" not found, try pulling it first' % name})
            loaded[name] = {"name": name, "model": name, "size": 5137025024, "digest": digest(name)[7:],
                            "expires_at": "2026-12-01T12:00:00Z", "size_vram": 5137025024}
            words = ["Hello", " from", " the", " fake", " ollama", "."]
            # A model that does not stop talking (a chat's cap must end it), a word per step.
            if name.startswith("chatty"):
                words = ["blah "] * 1000000
            now = "2026-12-01T11:00:00Z"
            if not stream:
                return self.send_json(200, {"model": name, "created_at": now, "response": "".join(words), "done": True, "done_reason": "stop"})
            self.start_stream()
            step = float(os.environ.get("FAKE_OLLAMA_WORD_S", "0"))
            for w in words:
                self.chunk({"model": name, "created_at": now, "response": w, "done": False})
                if step:
                    time.sleep(step)
            self.chunk({"model": name, "created_at": now, "response": "", "done": True, "done_reason": "stop", "eval_count": len(words)})
            return self.end_stream()
        self.send_json(404, {"error": "404 page not found"})


def main():
    args = sys.argv[1:]
    if args[:1] in (["--version"], ["-v"]):
        print("ollama version is " + VERSION)
        return 0
    if args[:1] == ["serve"]:
        host = os.environ.get("OLLAMA_HOST", "127.0.0.1:11434")
        h, _, p = host.rpartition(":")
        ThreadingHTTPServer((h or "127.0.0.1", int(p)), H).serve_forever()
        return 0
    print("Usage: ollama [command]", file=sys.stderr)
    return 1


sys.exit(main())
