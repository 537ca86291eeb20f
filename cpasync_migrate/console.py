"""The console script ``cpasync-migrate``: the import path made safe (``syspath.py``), then the command line."""
from .syspath import drop_unsafe


def main() -> int:
    drop_unsafe()
    from .cli import main as cli_main

    return cli_main()
