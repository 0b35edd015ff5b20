"""Fake alfworld AlfredTWEnv: three game files per split."""


class AlfredDemangler:
    pass


class AlfredInfos:
    pass


class AlfredTWEnv:
    def __init__(self, config, train_eval="train"):
        assert config.get("env", {}).get("type") == "AlfredTWEnv", config
        self.game_files = ["/fake/%s/game%d/game.tw-pddl" % (train_eval, i) for i in (2, 0, 1)]
