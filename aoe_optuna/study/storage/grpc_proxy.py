"""Serve one study storage to workers on other hosts through Optuna's gRPC proxy.

``python -m aoe_optuna.study.storage.grpc_proxy STORAGE_URL PORT [--host HOST]``: the
proxy holds the only database connection, and each worker runs
``aoe-tune --storage grpc://HOST:PORT ...``. It serves until interrupted.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from aoe_optuna.study.storage.opening import StorageError, open_storage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m aoe_optuna.study.storage.grpc_proxy", description=__doc__.splitlines()[0],
        epilog="example: python -m aoe_optuna.study.storage.grpc_proxy "
               "postgresql+psycopg://u@db/aoe 13000 --host 0.0.0.0")
    parser.add_argument("storage", help="the study storage URL (SQLite, Journal, PostgreSQL)")
    parser.add_argument("port", type=int)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")  # Optuna's experimental-API warnings on every start
    try:
        from optuna.storages import get_storage, run_grpc_proxy_server
    except ImportError as exc:  # grpcio missing: pip install 'aoe_optuna[grpc]'
        print(f"grpc_proxy: error: {exc}; install the grpc extra", file=sys.stderr)
        return 2
    try:
        opened = open_storage(args.storage)
        opened.owned_births = False  # type: ignore[attr-defined]  # its trials are its clients'
        storage = get_storage(opened)
    except (StorageError, ValueError) as exc:
        print(f"grpc_proxy: error: storage: {exc}", file=sys.stderr)
        return 2
    try:
        run_grpc_proxy_server(storage, host=args.host, port=args.port)
    except ImportError as exc:
        print(f"grpc_proxy: error: {exc}; install the grpc extra", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
