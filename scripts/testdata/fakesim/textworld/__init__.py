"""Fake textworld: EnvInfos only records what was requested."""


class EnvInfos:
    def __init__(self, **kw):
        self.kw = kw
