# Reference episodes for TestEpisodesMatchReference (python3 episodes_ref.py episodes.json):
# the 2048 env as spec envs.md §7 describes it (moves, merges, spawns, raw and log
# rewards, terminal info, render), from random boards and random moves. The spawn
# draws (empty-cell index, float) are recorded so the Go test can script them.
# Written for this port; plain lists instead of NumPy.
import random, json, math
class G:
    def __init__(s, size, two_prob, log, ints, floats):
        s.n=size; s.tp=two_prob; s.log=log; s.ints=ints; s.floats=floats; s.score=0
        s.grid=[[0]*size for _ in range(size)]; s.lookup={0:"Up",1:"Right",2:"Down",3:"Left"}
    def spawn(s):
        e=[(i,j) for i in range(s.n) for j in range(s.n) if s.grid[i][j]==0]
        if not e: return
        k=s.ints.pop(0) % len(e); s.used_i.append(k)
        r,c=e[k]; f=s.floats.pop(0); s.used_f.append(f)
        s.grid[r][c]=2 if f<s.tp else 4
    def cm(s,g,axis,rev):
        reward=0; moved=False
        for fx in range(s.n):
            line=[g[i][fx] for i in range(s.n)] if axis==0 else g[fx][:]
            if rev: line=line[::-1]
            vals=[v for v in line if v]; merged=[]; i=0
            while i<len(vals):
                if i+1<len(vals) and vals[i]==vals[i+1]:
                    m=vals[i]*2; reward+=m; merged.append(m); i+=2
                else: merged.append(vals[i]); i+=1
            merged+=[0]*(s.n-len(merged))
            if rev: merged=merged[::-1]
            if axis==0:
                before=[g[i][fx] for i in range(s.n)]
                for i in range(s.n): g[i][fx]=merged[i]
            else:
                before=g[fx][:]; g[fx]=merged[:]
            if before!=merged: moved=True
        return reward,moved
    def sim(s,g,a):
        return {0:lambda:s.cm(g,0,False),1:lambda:s.cm(g,1,True),2:lambda:s.cm(g,0,True),3:lambda:s.cm(g,1,False)}[a]()
    def valid(s):
        return [a for a in s.lookup if s.sim([r[:] for r in s.grid],a)[1]]
    def terminal(s):
        if any(v==0 for r in s.grid for v in r): return False
        return not s.valid()
    def step(s,a):
        rm,moved=s.sim(s.grid,a); term=False
        info={"action_is_effective":moved,"action_is_valid":True,"success":False}
        if not moved: info["action_is_valid"]=False; raw=-0.1
        else:
            s.spawn(); s.score+=rm; raw=float(rm); term=s.terminal()
            if term:
                mt=max(v for r in s.grid for v in r); info["max_tile"]=mt
                if mt>=2048: info["success"]=True
        fr=raw
        if s.log: fr=float(math.log2(raw+1.0))*0.1 if raw>0 else 0.0
        info["grid"]=[r[:] for r in s.grid]; info["action_mask"]=[a in s.valid() for a in range(4)]
        info["score"]=s.score; info["raw_reward"]=raw
        return s.render(),fr,term,info
    def render(s):
        L=["Current 2048 Grid:"]+[f"Row {i+1}: [{', '.join(str(x) for x in s.grid[i])}]" for i in range(s.n)]
        va=s.valid(); t=", ".join(f"{a}({s.lookup[a]})" for a in va) if va else "None"
        L+=["",f"Valid Actions: {t}.","Goal: Merge same numbers to reach 2048.",f"Current Score: {s.score}","What is your next move?"]
        return "\n".join(L)
rnd=random.Random(5); eps=[]
for k in range(8):
    size=rnd.choice([2,3,4]); log=rnd.random()<0.5
    ints=[rnd.randrange(1000) for _ in range(3000)]; floats=[rnd.random() for _ in range(3000)]
    g=G(size,0.9,log,ints,floats); g.used_i=[]; g.used_f=[]
    # start from a random grid of powers
    g.grid=[[rnd.choice([0,0,2,2,4,8,16,1024]) for _ in range(size)] for _ in range(size)]; g.score=rnd.randrange(100)
    start=[r[:] for r in g.grid]; sc=g.score; steps=[]
    for t in range(60):
        a=rnd.randrange(4); o,r,d,info=g.step(a)
        steps.append({"a":a,"obs":o,"r":repr(r),"done":d,"info":info})
        if d: break
    eps.append({"size":size,"log":log,"grid":start,"score":sc,"ints":g.used_i,"floats":g.used_f,"steps":steps})
import sys
json.dump(eps,open(sys.argv[1],'w'),indent=0)

