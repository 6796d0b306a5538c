"""Serving a folder on loopback until Ctrl-C (`kafka-chaos docs`, `kafka-chaos serve`): one loop, one message."""
from __future__ import annotations

import http.server


def serve_until_interrupted(server: http.server.HTTPServer, what: str) -> int:
    """Say where `what` is served, serve until Ctrl-C, close the socket; 0 (an interrupt is how it ends)."""
    host, port = server.server_address[:2]
    print(f"serving {what} at http://{host}:{port}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
