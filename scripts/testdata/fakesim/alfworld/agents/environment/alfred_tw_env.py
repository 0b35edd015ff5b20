"""Fake alfworld AlfredTWEnv: three game files per split; fake.broken in
the config lists game numbers whose files fail to load."""


class AlfredDemangler:
    pass


class AlfredInfos:
    pass


class AlfredTWEnv:
    def __init__(self, config, train_eval="train"):
        assert config.get("env", {}).get("type") == "AlfredTWEnv", config
        broken = config.get("fake", {}).get("broken", [])
        self.game_files = ["/fake/%s/game%d%s/game.tw-pddl" % (train_eval, i, "-broken" if i in broken else "")
                           for i in (2, 0, 1)]
