"""An HTTP server on 127.0.0.1 that holds every request until ``release`` is set, then answers it with
``answer(handler)``: a command using it (a build's mirror, a judge) is held mid-run until the test lets it go."""

import http.server
import threading


class HeldServer:
    def __init__(self, answer, path=""):
        self.arrived, self.release = threading.Event(), threading.Event()
        held = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                held.arrived.set()
                held.release.wait(120)
                answer(self)

            do_POST = do_GET

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
