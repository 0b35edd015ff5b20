"""Fake webshop_minimal: 2000 goals, a search page, a two-page result list,
an item page; buying earns 1.0 on even goals and 0.5 on odd ones."""
import re

DATASET = None
# The simulator's state per session id lives in one process-wide table, as
# in webshop-minimal's SimServer (user_sessions).
SESSIONS = {}


def init_basedir(dataset):
    global DATASET
    if dataset not in ("small", "full"):
        raise ValueError("dataset must be either 'small' or 'full'")
    DATASET = dataset


class _Server:
    def __init__(self, n):
        self.goals = [{"instruction_text": "find item %d" % i} for i in range(n)]


class WebAgentTextEnv:
    def __init__(self, observation_mode="text", file_path=None, server=None, filter_goals=None, limit_goals=-1,
                 num_products=None, human_goals=False, show_attrs=False, session_prefix=None):
        # webshop-minimal takes "" for the product file init_basedir chose;
        # None reaches open() and fails there
        if not isinstance(file_path, str):
            raise TypeError("expected str, bytes or os.PathLike object, not %s" % type(file_path).__name__)
        self.server = _Server(2000 if limit_goals in (None, -1) else limit_goals)
        self.session_prefix, self.session = session_prefix, None

    @property
    def page(self):
        return SESSIONS[self.session]["page"]

    @page.setter
    def page(self, v):
        SESSIONS[self.session]["page"] = v

    @property
    def goal(self):
        return SESSIONS[self.session]["goal"]

    @property
    def observation(self):
        return SESSIONS[self.session]["observation"] if self.session is not None else ""

    def _show(self):
        pages = {
            "search": "WebShop [SEP] Instruction: [SEP] find item %d [SEP] Search",
            "results": "[button] Back to Search [button_] [SEP] Page 1 [SEP] [button] B0001 [button_] Red shoe",
            "results2": "[button] Back to Search [button_] [SEP] Page 2 (end)",
            "item": "[button] Back to Search [button_] [SEP] Red shoe [SEP] [button] Buy Now [button_]",
            "done": "Thank you for shopping with us!",
        }
        SESSIONS[self.session]["observation"] = pages[self.page] % self.goal if "%d" in pages[self.page] else pages[self.page]

    def reset(self, session=None, instruction_text=None):
        self.session = (self.session_prefix or "") + str(session)
        SESSIONS[self.session] = {"goal": session, "page": "search"}
        self._show()
        return self.observation, None

    def get_instruction_text(self):
        return "Instruction: [SEP] find item %d (%s)" % (self.goal, DATASET)

    def get_available_actions(self):
        return {
            "search": {"has_search_bar": True, "clickables": ["search"]},
            "results": {"has_search_bar": False, "clickables": ["back to search", "next >", "b0001"]},
            "results2": {"has_search_bar": False, "clickables": ["back to search", "< prev", "next >"]},
            "item": {"has_search_bar": False, "clickables": ["back to search", "< prev", "buy now", "red"]},
            "done": {"has_search_bar": False, "clickables": []},
        }[self.page]

    def step(self, action):
        # webshop-minimal's rules (service-envs.md section 4): search runs
        # whenever the name is "search" (even without a search bar); a click
        # needs a clickable other than "search"; anything else is a no-op
        # with the int reward 0 and no info.
        m = re.match(r"(.+)\[(.+)\]", action)
        if not m:
            return self.observation, 0, False, None
        name, arg = m.group(1), m.group(2).lower()
        clickables = self.get_available_actions()["clickables"]
        if name == "search":
            self.page = "results"
        elif name == "click" and arg in clickables and arg != "search":
            self.page = {"back to search": "search", "next >": "results2", "< prev": "results",
                         "b0001": "item", "buy now": "done"}.get(arg, self.page)
        else:
            return self.observation, 0, False, None
        reward, done, info = 0.0, False, None
        if self.page == "done":
            done = True
            reward = 1.0 if self.goal % 2 == 0 else 0.5
            info = {"r_type": 1.0, "r_att": 0.5, "w_att": 0.25, "query_match": True, "category_match": False,
                    "title_score": 0.75, "r_price": True, "w_price": 0.25, "note": "fake purchase"}
        self._show()
        return self.observation, reward, done, info
