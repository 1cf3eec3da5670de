"""`Config` and `Ctx` as tiledb-py has them. Tessera needs no context; the settings it reads
(``sm.consolidation.mode``, ``sm.vacuum.mode``, ``sm.memory_budget``, ...) are taken from
them, and plain dicts work too. Object-store credentials come from the environment."""

from __future__ import annotations


class Config(dict):
    """Settings by name (a dict with tiledb-py's methods)."""

    def __init__(self, params=None, path=None):
        super().__init__()
        if params:
            self.update({str(k): str(v) for k, v in dict(params).items()})

    def get(self, key, default=None, raise_keyerror=False):
        if key in self:
            return super().get(key)
        if raise_keyerror:
            raise KeyError(key)
        return default

    def set(self, key, value):
        self[str(key)] = str(value)

    def dict(self, prefix: str = "") -> dict:
        return {k: v for k, v in self.items() if k.startswith(prefix)}

    def __repr__(self) -> str:
        return f"Config({dict(self)!r})"


class Ctx:
    """A context: holds a `Config`."""

    def __init__(self, config=None):
        self._config = config if isinstance(config, Config) else Config(config)

    def config(self) -> Config:
        return self._config

    def __repr__(self) -> str:
        return f"Ctx({dict(self._config)!r})"


_default = None


def default_ctx(config=None) -> Ctx:
    global _default
    if _default is None or config is not None:
        _default = Ctx(config)
    return _default


def _config_dict(config=None, ctx=None) -> dict:
    out = {}
    if ctx is not None:
        out.update(ctx.config())
    if config is not None:
        out.update({str(k): str(v) for k, v in dict(config).items()})
    return out
