"""The trainer worker: the trainer protocol as JSON over HTTP on 127.0.0.1.

  /usr/bin/python3 -m trainers.torch.worker --port N --model-dir D --out-dir O [--lr 1e-4] [--threads 2]

On start it prints one JSON line to stdout, {"event": "listening", "port": N, "protocolVersion": 1}
(with --port 0 the system picks the port). Errors are JSON bodies {"error": {code, message, hint}}
with status 400 (the request or batch was refused) or 500 (a bug; the traceback goes to stderr).
Under torchrun with several ranks, rank 0 serves HTTP and broadcasts each command to all ranks.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Tuple


def exit_with_parent() -> None:
    """Die when the process that started the worker dies, however it dies (kill -9 included).

    Linux: the kernel sends SIGKILL on the parent's death (PR_SET_PDEATHSIG). Elsewhere, and as a
    backstop, a daemon thread exits once the parent is gone (the worker is re-parented).
    Armed before torch loads, so a parent killed during the slow import is seen too.
    """
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            PR_SET_PDEATHSIG = 1
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the kernel was told
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


if __name__ == "__main__":
    exit_with_parent()

import torch  # noqa: E402  (after exit_with_parent: the import takes seconds)

from .batch import BatchProblem  # noqa: E402
from .distributed import Dist  # noqa: E402
from .trainer import PROTOCOL_VERSION, Trainer  # noqa: E402

ROUTES = {
    "/forward_backward": "forward_backward", "/optim_step": "optim_step", "/save_weights": "save_weights",
    "/checkpoint": "checkpoint", "/restore": "restore", "/compute_logprobs": "compute_logprobs",
    "/compute_values": "compute_values",
}


def run_command(trainer: Trainer, name: str, body: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
    try:
        return 200, getattr(trainer, name)(body)
    except BatchProblem as p:
        return 400, {"error": {"code": p.code, "message": p.message, "hint": p.hint}}
    except Exception as e:  # a bug: report it in words, keep serving
        traceback.print_exc(file=sys.stderr)
        return 500, {"error": {"code": "TrainerInternalError", "message": f"{type(e).__name__}: {e}",
                               "hint": "this is a bug in the trainer worker; its stderr has the traceback"}}


def finite(x: Any) -> Any:
    """JSON has no NaN/inf: such metrics are sent as null (and a refused step says why in words)."""
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def make_handler(trainer: Trainer, dist: Dist, lock: threading.Lock, stop: Callable[[], None]):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet: stderr is for problems
            pass

        def _send(self, status: int, body: Dict[str, Any]) -> None:
            data = json.dumps(finite(body), allow_nan=False, default=str).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/") in ("/health", "/v1/health"):
                body = trainer.health()
                body["busy"] = lock.locked()
                self._send(200, body)
            else:
                self._send(404, {"error": {"code": "UnknownRoute", "message": f"no route GET {self.path}",
                                           "hint": "GET /health; everything else is POST"}})

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(n) or b"{}")
            except json.JSONDecodeError as e:
                self._send(400, {"error": {"code": "BadRequest", "message": f"the body is not JSON: {e}",
                                           "hint": "send a JSON object"}})
                return
            path = self.path.rstrip("/")
            if path.startswith("/v1/"):
                path = path[3:]
            want = body.get("protocolVersion", PROTOCOL_VERSION) if isinstance(body, dict) else None
            if want != PROTOCOL_VERSION:
                self._send(400, {"error": {"code": "ProtocolMismatch", "message": f"the client speaks protocol "
                                           f"{want}, this worker speaks {PROTOCOL_VERSION}",
                                           "hint": "use a client and worker from the same reins version"}})
                return
            if path == "/shutdown":
                self._send(200, {"ok": True})
                threading.Thread(target=stop, daemon=True).start()
                return
            name = ROUTES.get(path)
            if name is None:
                self._send(404, {"error": {"code": "UnknownRoute", "message": f"no route POST {self.path}",
                                           "hint": "see trainers/torch/README.md for the protocol"}})
                return
            with lock:
                dist.broadcast((name, body))
                status, out = run_command(trainer, name, body)
            out["protocolVersion"] = PROTOCOL_VERSION
            self._send(status, out)

    return Handler


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m trainers.torch.worker")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0 = torch's default)")
    ap.add_argument("--device", default="auto", help="cpu, cuda or auto")
    ap.add_argument("--micro-batch-tokens", type=int, default=8192, help="padded tokens per micro-batch")
    ap.add_argument("--micro-batch-cells", type=int, default=0,
                    help="attention cells (rows × length²) per micro-batch; 0 = 4M on CPU, 256M on CUDA")
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--no-share-prefix", action="store_true",
                    help="compute every row's prefix itself, even when all rows of a micro-batch share it")
    ap.add_argument("--value-head", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wait-for-model", type=float, default=0, metavar="SECONDS",
                    help="wait up to this long for --model-dir/config.json to appear (a Kubernetes Job's "
                         "pod starts before reins has staged the initial policy in the weights claim)")
    a = ap.parse_args(argv)
    if a.wait_for_model > 0:
        deadline = time.monotonic() + a.wait_for_model
        while not os.path.exists(os.path.join(a.model_dir, "config.json")):
            if time.monotonic() > deadline:
                print(f"trainer worker: no model in {a.model_dir} after {a.wait_for_model:.0f} s (ModelNotStaged); "
                      "reins run stages the initial policy there once the pod runs", file=sys.stderr)
                return 1
            time.sleep(0.5)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dist = Dist.from_env()
    device = a.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and dist.world > 1:
        device = f"cuda:{dist.local_rank}"
    try:
        trainer = Trainer(a.model_dir, a.out_dir, lr=a.lr, device=device, micro_batch_tokens=a.micro_batch_tokens,
                          micro_batch_cells=a.micro_batch_cells, grad_clip=a.grad_clip, value_head=a.value_head, seed=a.seed, dist=dist,
                          share_prefix=not a.no_share_prefix)
    except BatchProblem as p:
        print(f"trainer worker: {p.message} ({p.code}); {p.hint}", file=sys.stderr)
        return 1
    if not dist.is_main:  # follower ranks execute rank 0's commands
        while True:
            name, body = dist.broadcast(None)
            if name == "shutdown":
                return 0
            run_command(trainer, name, body)
    lock = threading.Lock()
    server: ThreadingHTTPServer

    def stop() -> None:
        with lock:
            dist.broadcast(("shutdown", {}))
        server.shutdown()

    server = ThreadingHTTPServer((a.host, a.port), make_handler(trainer, dist, lock, stop))
    server.daemon_threads = True
    print(json.dumps({"event": "listening", "host": a.host, "port": server.server_address[1],
                      "protocolVersion": PROTOCOL_VERSION, "device": device, "worldSize": dist.world}), flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
