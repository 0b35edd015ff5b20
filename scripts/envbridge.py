#!/usr/bin/env python3
"""envbridge: upstream simulators behind the protocol of `ragen serve-envs`.

WebShop and ALFWorld are Python simulators (webshop-minimal; alfworld +
TextWorld). This program wraps them, with upstream RAGEN's env behaviour
(shared spec envs.md sections 12 and 13), behind the JSON-over-HTTP protocol
of package ragen/env/httpenv (version 1), so ragen's `webshop` and
`alfworld` env types (and env_type `http`) can use them:

    POST   /v1/envs             {"env_type": "webshop"|"alfworld", "env_config": {...}|null}
    POST   /v1/envs/{id}/reset  {"seed": 42, "mode": "train"|"val"|"test"}
    POST   /v1/envs/{id}/step   {"action": {"id": 0, "text": "search[red shoes]"}}
    GET    /v1/envs/{id}/render
    DELETE /v1/envs/{id}
    GET    /v1/health

Usage:

    pip install webshop-minimal          # for webshop (or put RAGEN's external/webshop-minimal on PYTHONPATH)
    pip install alfworld textworld       # for alfworld; then `alfworld-download` and export ALFWORLD_DATA
    python3 scripts/envbridge.py --host 127.0.0.1 --port 8120

then train or evaluate with the WebShop, WebShopFull, Alfworld or AlfworldOOD
tags (their bridge_url defaults to http://127.0.0.1:8120). The simulator
packages are imported when the first env of their type is created; a missing
package is answered with status 422 and a message naming it, which ragen
reports before any model loads. If RAGEN_ENV_TOKEN is set, requests must carry
"Authorization: Bearer <token>".

Only the Python standard library is needed besides the simulators.
"""
import argparse
import json
import os
import random
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROTOCOL_MAX_BODY = 1 << 20


class EnvError(Exception):
    """The env refused (bad config, missing simulator, bad call): status 422."""


# --------------------------------------------------------------------------
# WebShop (envs.md section 12)

WEBSHOP_INSTRUCTIONS = [
    "We must buy a product within 10 actions. It doesn't have to match perfectly with description.",
    "Search term should not include details like size, color.",
    "Never search for more than 2 times.",
    "Do not be too strict about the description, it's more important to buy one that is close enough within action limit.",
    "Prioritize click a product in the current page over going to next page.",
    "Almost never click[next >] for more than 2 times.",
    "Almost never click[< prev] unless you are sure the product is on one of the previous pages.",
    "If you have less than 3 actions left, just buy the first product you see in the current page.",
    "If an matching option exists, make sure to click[size] then click[color], one at a time, before click[buy now], but don't have to if only 1 action left, in that case you just click[buy now]. Never click description.",
]
WEBSHOP_KEYS = {"dataset", "observation_mode", "file_path", "server", "filter_goals", "limit_goals",
                "num_products", "human_goals", "show_attrs"}
ACTION_RE = re.compile(r"(.+)\[(.+)\]")


def import_webshop():
    try:
        from webshop_minimal import WebAgentTextEnv  # RAGEN's trimmed WebShop
        return WebAgentTextEnv, sys.modules["webshop_minimal"]
    except ImportError:
        pass
    try:
        from web_agent_site.envs.web_agent_text_env import WebAgentTextEnv  # original WebShop
        return WebAgentTextEnv, None
    except ImportError:
        raise EnvError("webshop needs the webshop-minimal Python package (pip install webshop-minimal, "
                       "or RAGEN's external/webshop-minimal on PYTHONPATH) and its product data")


class WebShop:
    def __init__(self, cfg):
        cfg = dict(cfg or {})
        unknown = set(cfg) - WEBSHOP_KEYS
        if unknown:
            raise EnvError("webshop: unknown env_config keys %s (valid: %s)" % (sorted(unknown), ", ".join(sorted(WEBSHOP_KEYS))))
        if cfg.get("server") is not None:
            raise EnvError("webshop: server must be null")
        dataset = cfg.get("dataset", "small")
        if dataset not in ("small", "full"):
            raise EnvError("webshop: dataset %r: dataset must be either 'small' or 'full'" % (dataset,))
        cls, mod = import_webshop()
        kwargs = dict(observation_mode=cfg.get("observation_mode", "text"), file_path=cfg.get("file_path"), server=None,
                      filter_goals=cfg.get("filter_goals"), limit_goals=cfg.get("limit_goals", -1),
                      num_products=cfg.get("num_products"), human_goals=cfg.get("human_goals", False),
                      show_attrs=cfg.get("show_attrs", False))
        if mod is not None:
            # webshop-minimal: as upstream, init_basedir picks the small or
            # full product files, and file_path "" (upstream's default, the
            # utils' DEFAULT_FILE_PATH before init_basedir runs) means those.
            init = getattr(mod, "init_basedir", None) or getattr(getattr(mod, "utils", None), "init_basedir", None)
            if init is not None:
                init(dataset)
            if kwargs["file_path"] is None:
                kwargs["file_path"] = ""
            # each env its own sessions in the process-wide simulator server,
            # so envs on the same goal (a group) do not share one
            kwargs["session_prefix"] = uuid.uuid4().hex
        elif kwargs["file_path"] is None:
            del kwargs["file_path"]  # the original WebShop's own default
        self.sim = cls(**kwargs)
        self.n_goals = len(self.sim.server.goals)
        self.perm = list(range(self.n_goals))
        random.Random(42).shuffle(self.perm)
        self.render_text = ""

    def goal_index(self, seed, mode):
        # service-envs.md section 4: train, val and test only; an index past
        # the goals fails (so train needs more than 1500 goals).
        if mode == "test":
            i = seed % 500
        elif mode == "val":
            i = seed % 1000 + 500
        elif mode == "train":
            if self.n_goals <= 1500:
                raise EnvError("webshop: train mode needs more than 1500 goals; the simulator has %d" % self.n_goals)
            i = seed % (self.n_goals - 1500) + 1500
        else:
            raise EnvError("webshop: mode %r: want train, val or test" % (mode,))
        if i >= self.n_goals:
            raise EnvError("webshop: goal index %d out of range (the simulator has %d goals)" % (i, self.n_goals))
        return self.perm[i]

    def available_actions(self):
        av = self.sim.get_available_actions()
        acts = []
        if av.get("has_search_bar"):
            acts.append("search[<content>]")
        for c in av.get("clickables", []):
            if c != "search":
                acts.append("click[%s]" % c)
        if acts == ["click[back to search]", "click[< prev]", "click[next >]"]:
            acts.remove("click[next >]")
        return acts

    def prepare_render(self, page):
        self.render_text = (page + "." + "\n".join(WEBSHOP_INSTRUCTIONS) + "\n You must choose from these actions:"
                            + ", ".join(self.available_actions()) + ".")

    def reset(self, seed, mode):
        # No seed: upstream returns None and changes nothing.
        if seed is None:
            return None
        session = self.goal_index(seed, mode)
        out = self.sim.reset(session=session)
        obs = out[0] if isinstance(out, tuple) else out
        self.prepare_render(self.sim.get_instruction_text())
        return obs  # the simulator's own reset observation, not the render

    def step(self, text):
        av = self.sim.get_available_actions()
        m = ACTION_RE.match(text)
        valid = False
        if m:
            name, arg = m.group(1), m.group(2).lower()
            if name == "search":
                valid = bool(av.get("has_search_bar")) and arg != ""
            elif name == "click":
                valid = arg != "search" and arg in av.get("clickables", [])
        before = self.sim.observation
        obs, raw, done, sim_info = self.sim.step(text)
        reward = 1.0 if raw >= 1.0 else 0.0
        after = self.sim.observation
        self.prepare_render(after)
        info = dict(sim_info or {})
        info.update({
            "reward": reward, "raw_reward": raw, "action_is_effective": before != after, "action_is_valid": valid,
            "success": int(reward == 1), "success_purchase": int(bool(done)), "success_find": int(reward == 1),
            "end_of_page": int(self.available_actions() == ["click[back to search]", "click[< prev]"]),
        })
        return obs, reward, False, bool(done), info

    def render(self):
        return self.render_text

    def close(self):
        close = getattr(self.sim, "close", None)
        if close:
            close()


# --------------------------------------------------------------------------
# ALFWorld (envs.md section 13)

ALFWORLD_KEYS = {"config_file", "score", "render_mode", "eval_dataset"}
ALFWORLD_DEFAULT_CONFIG_FILE = "./ragen/env/alfworld/alfworld_config.yaml"
# A reset retries a game that fails to load with another (upstream: without
# end); this many failures in a row end it with an error.
ALFWORLD_LOAD_TRIES = 20
# game lists by (config, $ALFWORLD_DATA, split), shared by the process's envs
ALFWORLD_FILES, ALFWORLD_FILES_LOCK = {}, threading.Lock()
# The settings of upstream's alfworld_config.yaml that ALFWorld's text
# environment and this bridge read: the data under $ALFWORLD_DATA, the six
# task types, and a 50-step episode.
ALFWORLD_DEFAULT_CONFIG = {
    "dataset": {
        "data_path": "$ALFWORLD_DATA/json_2.1.1/train",
        "eval_id_data_path": "$ALFWORLD_DATA/json_2.1.1/valid_seen",
        "eval_ood_data_path": "$ALFWORLD_DATA/json_2.1.1/valid_unseen",
        "num_train_games": -1,
        "num_eval_games": -1,
    },
    "logic": {
        "domain": "$ALFWORLD_DATA/logic/alfred.pddl",
        "grammar": "$ALFWORLD_DATA/logic/alfred.twl2",
    },
    "env": {
        "type": "AlfredTWEnv",
        "regen_game_files": False,
        "domain_randomization": False,
        "task_types": [1, 2, 3, 4, 5, 6],
        "expert_timeout_steps": 150,
        "expert_type": "handcoded",
        "goal_desc_human_anns_prob": 0.0,
    },
    "general": {"random_seed": 42, "use_cuda": False, "task": "alfred", "training_method": "dagger"},
    "rl": {"training": {"max_nb_steps_per_episode": 50}},
    "dagger": {"training": {"max_nb_steps_per_episode": 50}},
}


class Alfworld:
    def __init__(self, cfg):
        cfg = dict(cfg or {})
        unknown = set(cfg) - ALFWORLD_KEYS
        if unknown:
            raise EnvError("alfworld: unknown env_config keys %s (valid: %s)" % (sorted(unknown), ", ".join(sorted(ALFWORLD_KEYS))))
        self.score = float(cfg.get("score", 10.0))
        self.eval_dataset = cfg.get("eval_dataset", "eval_in_distribution")
        path = cfg.get("config_file", ALFWORLD_DEFAULT_CONFIG_FILE)
        if not os.environ.get("ALFWORLD_DATA"):
            raise EnvError("alfworld: ALFWORLD_DATA is not set (run alfworld-download and export ALFWORLD_DATA)")
        try:
            import yaml
            import textworld
            import textworld.gym
            from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos, AlfredTWEnv
        except ImportError as e:
            raise EnvError("alfworld needs the alfworld and textworld Python packages (pip install alfworld textworld) and PyYAML: %s" % e)
        if os.path.isfile(path):
            with open(path) as f:
                self.tw_config = yaml.safe_load(f)
        elif path == ALFWORLD_DEFAULT_CONFIG_FILE:
            # upstream ships this file; without a copy in the bridge's
            # working directory, the same settings built in
            self.tw_config = json.loads(json.dumps(ALFWORLD_DEFAULT_CONFIG))
        else:
            raise EnvError("alfworld: config_file %s not found (upstream's is ragen/env/alfworld/alfworld_config.yaml)" % path)
        try:
            self.max_steps = int(self.tw_config["rl"]["training"]["max_nb_steps_per_episode"])
        except (KeyError, TypeError, ValueError):
            raise EnvError("alfworld: config_file %s needs an integer rl.training.max_nb_steps_per_episode (the episode's step limit; upstream's file has 50)" % path)
        self.textworld = textworld
        self.AlfredTWEnv, self.wrappers = AlfredTWEnv, [AlfredDemangler(), AlfredInfos]
        self.files = {}
        self.mode = "train"
        self.files["train"] = self.load_files("train")  # upstream loads the train games eagerly
        self.game = None
        self.admissible = []
        self.render_text = ""

    def load_files(self, split):
        # ALFWorld's own collection order (os.walk, not sorted). Collecting
        # walks and parses thousands of game folders, so the list is made
        # once per process for each config and split (the same list upstream
        # builds per env).
        key = (json.dumps(self.tw_config, sort_keys=True, default=str), os.environ.get("ALFWORLD_DATA"), split)
        with ALFWORLD_FILES_LOCK:
            files = ALFWORLD_FILES.get(key)
            if files is None:
                files = list(self.AlfredTWEnv(self.tw_config, train_eval=split).game_files)
                if not files:
                    raise EnvError("alfworld: no game files for split %s under $ALFWORLD_DATA" % split)
                ALFWORLD_FILES[key] = files
        return list(files)

    def split_of(self, mode):
        return "train" if mode == "train" else self.eval_dataset

    def game_files(self, split):
        if split not in self.files:
            self.files[split] = self.load_files(split)
        return self.files[split]

    def show(self, obs, infos):
        self.admissible = list(infos.get("admissible_commands") or [])
        self.render_text = "%s\n\nAdmissible actions: [%s]" % (obs, ", ".join(self.admissible))

    def reset(self, seed, mode):
        # service-envs.md section 5: the mode changes only when the mapped
        # split changes (QUIRK: val -> test keeps mode val).
        if mode is not None and mode != self.mode and self.split_of(mode) != self.split_of(self.mode):
            self.mode = mode
        failures = []
        while True:
            files = self.game_files(self.split_of(self.mode))
            if self.mode == "test":
                if seed is None:
                    raise EnvError("Seed must be provided in test mode.")
                gamefile = files[seed % len(files)]
            elif seed is not None:
                if not 0 <= seed < 1 << 32:
                    # NumPy's own error, which upstream's reset raises
                    raise EnvError("alfworld: seed %d: Seed must be between 0 and 2**32 - 1" % seed)
                random.seed(seed)
                try:
                    import numpy
                    numpy.random.seed(seed)
                except ImportError:
                    pass
                gamefile = files[seed % len(files)]
            else:
                gamefile = random.choice(files)
            try:
                obs, infos = self.load(gamefile)
                break
            except (RuntimeError, RuntimeWarning) as e:
                # Upstream resets again with abs(hash(str(seed))) % 2**32 (a
                # per-process random hash; a stable substitute keeps resets
                # reproducible), or without a seed, until a game loads.
                failures.append("%s: %s" % (gamefile, e))
                if len(failures) >= ALFWORLD_LOAD_TRIES:
                    raise EnvError("alfworld: %d games in a row failed to load: %s" % (len(failures), "; ".join(failures)))
                if seed is not None:
                    import zlib
                    seed = zlib.crc32(str(seed).encode())
        self.show(obs, infos)
        return self.render_text

    def load(self, gamefile):
        infos = self.textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        env_id = self.textworld.gym.register_game(gamefile, infos, max_episode_steps=self.max_steps, wrappers=self.wrappers)
        self.close()
        self.game = self.textworld.gym.make(env_id)
        return self.game.reset()

    def step(self, text):
        if self.game is None:
            raise EnvError("alfworld: step before reset")
        valid = text in self.admissible
        obs, _, done, infos = self.game.step(text)
        won = bool(infos.get("won"))
        self.show(obs, infos)
        # The observation is the render: feedback plus the new admissible list.
        return self.render_text, self.score * float(won), False, bool(done), {
            "action_is_effective": True, "action_is_valid": valid, "success": won}

    def render(self):
        return self.render_text

    def close(self):
        if self.game is not None:
            try:
                self.game.close()
            except Exception:
                pass
            self.game = None


ENV_TYPES = {"webshop": WebShop, "alfworld": Alfworld}


# --------------------------------------------------------------------------
# The protocol

class Entry:
    def __init__(self, env):
        self.env = env
        self.lock = threading.Lock()
        self.used = time.monotonic()


class Registry:
    def __init__(self, max_envs, idle):
        self.envs, self.lock, self.max_envs, self.idle = {}, threading.Lock(), max_envs, idle

    def add(self, env):
        with self.lock:
            self.expire()
            if len(self.envs) >= self.max_envs:
                return None
            i = uuid.uuid4().hex
            self.envs[i] = Entry(env)
            return i

    def get(self, i):
        with self.lock:
            e = self.envs.get(i)
            if e:
                e.used = time.monotonic()
            return e

    def pop(self, i):
        with self.lock:
            return self.envs.pop(i, None)

    def expire(self):
        now = time.monotonic()
        for i in [i for i, e in self.envs.items() if now - e.used > self.idle]:
            self.envs.pop(i).env.close()


def check_value(k, v):
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("info %s is not finite" % k)
        return v
    if isinstance(v, (list, tuple)):
        return [check_value(k, e) for e in v]
    if isinstance(v, dict):
        return {str(kk): check_value(k, e) for kk, e in v.items()}
    raise ValueError("info %s has type %s (want JSON data: number, bool, string, None, list or dict)" % (k, type(v).__name__))


def check_info(info):
    return {k: check_value(k, v) for k, v in info.items()}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes
    registry = None
    token = None

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("envbridge: " + fmt % args + "\n")

    def reply(self, status, obj=None):
        body = b"" if obj is None else json.dumps(obj).encode()
        self.send_response(status)
        if obj is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, msg):
        self.reply(status, {"error": msg})

    def body(self, fields):
        n = int(self.headers.get("Content-Length") or 0)
        if n > PROTOCOL_MAX_BODY:
            raise ProtocolError(413, "body over %d bytes" % PROTOCOL_MAX_BODY)
        try:
            obj = json.loads(self.rfile.read(n) or b"null")
        except ValueError as e:
            raise ProtocolError(400, "malformed body: %s" % e)
        if not isinstance(obj, dict):
            raise ProtocolError(400, "body must be a JSON object")
        unknown = set(obj) - set(fields)
        if unknown:
            raise ProtocolError(400, "unknown field(s) %s" % sorted(unknown))
        return obj

    def authorized(self):
        if self.token and self.headers.get("Authorization") != "Bearer " + self.token:
            self.error(401, "missing or wrong bearer token")
            return False
        return True

    def route(self, method):
        if not self.authorized():
            return
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        try:
            if parts == ["v1", "health"] and method == "GET":
                return self.reply(200, {"status": "ok", "envs": len(self.registry.envs), "env_types": sorted(ENV_TYPES)})
            if parts == ["v1", "envs"]:
                if method != "POST":
                    return self.error(405, "method not allowed")
                return self.create()
            if len(parts) >= 3 and parts[:2] == ["v1", "envs"]:
                call = parts[3] if len(parts) == 4 else ""
                allowed = {"": "DELETE", "reset": "POST", "step": "POST", "render": "GET"}
                if len(parts) > 4 or call not in allowed:
                    return self.error(404, "unknown route")
                if method != allowed[call]:
                    return self.error(405, "method not allowed")
                if call == "":
                    e = self.registry.pop(parts[2])
                    if e is None:
                        return self.error(404, "unknown env id %s" % parts[2])
                    with e.lock:
                        e.env.close()
                    return self.reply(204)
                e = self.registry.get(parts[2])
                if e is None:
                    return self.error(404, "unknown env id %s (never created, closed or expired)" % parts[2])
                with e.lock:
                    return getattr(self, call)(e.env)
            return self.error(404, "unknown route")
        except ProtocolError as p:
            return self.error(p.status, p.msg)
        except EnvError as x:
            return self.error(422, str(x))
        except Exception as x:  # the simulator failed
            return self.error(422, "%s: %s" % (type(x).__name__, x))

    def create(self):
        req = self.body({"env_type", "env_config"})
        t = req.get("env_type")
        if t not in ENV_TYPES:
            raise EnvError("unknown env_type %r (this bridge serves %s)" % (t, ", ".join(sorted(ENV_TYPES))))
        env = ENV_TYPES[t](req.get("env_config"))
        i = self.registry.add(env)
        if i is None:
            env.close()
            return self.error(429, "env cap reached")
        self.reply(200, {"id": i, "render": env.render()})

    def reset(self, env):
        req = self.body({"seed", "mode"})
        seed = req.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ProtocolError(400, "seed must be an integer")
        obs = env.reset(seed, req.get("mode") or None)  # "" (a Go client's zero Mode) is null
        if obs is None:
            obs = ""
        self.reply(200, {"observation": obs, "render": env.render()})

    def step(self, env):
        req = self.body({"action"})
        a = req.get("action")
        if not isinstance(a, dict) or not isinstance(a.get("text", ""), str):
            raise ProtocolError(400, "action must be {\"id\": int, \"text\": string}")
        obs, reward, is_int, done, info = env.step(a.get("text", ""))
        try:
            info = check_info(info)
        except ValueError as x:
            return self.error(500, str(x))
        self.reply(200, {"observation": obs, "reward": int(reward) if is_int else float(reward), "reward_is_int": is_int,
                         "done": done, "info": info, "render": env.render()})

    def render(self, env):
        self.reply(200, {"observation": env.render()})

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")


class ProtocolError(Exception):
    def __init__(self, status, msg):
        self.status, self.msg = status, msg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8120)
    ap.add_argument("--max-envs", type=int, default=1024)
    ap.add_argument("--idle-timeout", type=float, default=600.0, help="seconds before an unused env is closed")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    Handler.registry = Registry(args.max_envs, args.idle_timeout)
    Handler.token = os.environ.get("RAGEN_ENV_TOKEN") or None
    srv = ThreadingHTTPServer((args.host, args.port), Handler)
    srv.verbose = args.verbose
    srv.daemon_threads = True
    print("envbridge: serving %s on http://%s:%d" % (", ".join(sorted(ENV_TYPES)), args.host, srv.server_address[1]), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
