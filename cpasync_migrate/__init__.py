"""cpasync-migrate: migrate TileLang's legacy ptx_cp_async calls to access pointers."""

__version__ = "0.1.0"
