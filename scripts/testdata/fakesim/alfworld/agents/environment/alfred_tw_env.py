"""Fake alfworld AlfredTWEnv: three game files per split; fake.broken in
the config lists game numbers whose files fail to load; fake.count_file
names a file that gets a line for each collection of game files."""


class AlfredDemangler:
    pass


class AlfredInfos:
    pass


class AlfredTWEnv:
    def __init__(self, config, train_eval="train"):
        assert config.get("env", {}).get("type") == "AlfredTWEnv", config
        fake = config.get("fake", {})
        if fake.get("count_file"):  # one line per collection of game files
            with open(fake["count_file"], "a") as f:
                f.write(train_eval + "\n")
        broken = fake.get("broken", [])
        self.game_files = ["/fake/%s/game%d%s/game.tw-pddl" % (train_eval, i, "-broken" if i in broken else "")
                           for i in (2, 0, 1)]
