"""Fake textworld.gym: one task per game, "put a apple in fridge"; taking
the apple then putting it in the fridge wins; the episode ends (lost) at
max_episode_steps. A game whose path holds "broken" fails to load with a
RuntimeError, as a corrupt ALFWorld game does."""
_games = {}


def register_game(gamefile, request_infos=None, max_episode_steps=None, wrappers=None):
    assert isinstance(max_episode_steps, int) and max_episode_steps > 0, max_episode_steps
    assert request_infos.kw.get("admissible_commands") and request_infos.kw.get("won")
    env_id = "tw-%d" % len(_games)
    _games[env_id] = (gamefile, max_episode_steps)
    return env_id


class _Game:
    def __init__(self, gamefile, max_steps):
        self.gamefile, self.max_steps, self.has_apple, self.steps = gamefile, max_steps, False, 0

    def _infos(self, won=False):
        acts = ["look", "go to fridge 1", "take apple 1 from countertop 1"]
        if self.has_apple:
            acts = ["look", "go to fridge 1", "put apple 1 in/on fridge 1"]
        return {"won": won, "admissible_commands": acts}

    def reset(self):
        if "broken" in self.gamefile:
            raise RuntimeError("cannot load %s" % self.gamefile)
        self.has_apple, self.steps = False, 0
        return ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room (%s).\n\n"
                "Your task is to: put a apple in fridge." % self.gamefile), self._infos()

    def step(self, cmd):
        self.steps += 1
        if cmd == "take apple 1 from countertop 1" and not self.has_apple:
            self.has_apple = True
            return "You pick up the apple 1 from the countertop 1.", 0, False, self._infos()
        if cmd == "put apple 1 in/on fridge 1" and self.has_apple:
            return "You put the apple 1 in/on the fridge 1.", 1, True, self._infos(won=True)
        return "Nothing happens.", 0, self.steps >= self.max_steps, self._infos()

    def close(self):
        pass


def make(env_id):
    return _Game(*_games[env_id])
