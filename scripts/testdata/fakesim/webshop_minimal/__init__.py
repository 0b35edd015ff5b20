"""Fake webshop_minimal: 2000 goals, a search page, a two-page result list,
an item page; buying earns 1.0 on even goals and 0.5 on odd ones."""
DATASET = None


def init_basedir(dataset):
    global DATASET
    DATASET = dataset


class _Server:
    def __init__(self, n):
        self.goals = [{"instruction_text": "find item %d" % i} for i in range(n)]


class WebAgentTextEnv:
    def __init__(self, observation_mode="text", file_path=None, server=None, filter_goals=None, limit_goals=-1,
                 num_products=None, human_goals=False, show_attrs=False):
        self.server = _Server(2000 if limit_goals in (None, -1) else limit_goals)
        self.page, self.goal, self.observation = "search", 0, ""

    def _show(self):
        pages = {
            "search": "WebShop [SEP] Instruction: [SEP] find item %d [SEP] Search",
            "results": "[button] Back to Search [button_] [SEP] Page 1 [SEP] [button] B0001 [button_] Red shoe",
            "results2": "[button] Back to Search [button_] [SEP] Page 2 (end)",
            "item": "[button] Back to Search [button_] [SEP] Red shoe [SEP] [button] Buy Now [button_]",
            "done": "Thank you for shopping with us!",
        }
        self.observation = pages[self.page] % self.goal if "%d" in pages[self.page] else pages[self.page]

    def reset(self, session=None, instruction_text=None):
        self.goal, self.page = session, "search"
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
        a = action.lower()
        reward, done = 0.0, False
        if self.page == "search" and a.startswith("search["):
            self.page = "results"
        elif a == "click[back to search]":
            self.page = "search"
        elif self.page == "results" and a == "click[next >]":
            self.page = "results2"
        elif self.page == "results" and a == "click[b0001]":
            self.page = "item"
        elif self.page == "item" and a == "click[buy now]":
            self.page, done = "done", True
            reward = 1.0 if self.goal % 2 == 0 else 0.5
        self._show()
        return self.observation, reward, done, None
