# Reference episodes for TestEpisodesMatchReference (python3 episodes_ref.py episodes.json):
# the Sudoku env as spec envs.md §6 describes it (generation on CPython's random,
# parsing, step rewards, info keys, feedback and the three render formats), driven
# by random actions. Written for this port; plain lists instead of NumPy.
import random, json, re, sys
import random, json
def valid(g,r,c,v,n,b):
    if v in g[r]: return False
    if any(g[i][c]==v for i in range(n)): return False
    br,bc=(r//b)*b,(c//b)*b
    return not any(g[i][j]==v for i in range(br,br+b) for j in range(bc,bc+b))
def gen(n,diff,seed):
    random.seed(seed)
    b=int(n**0.5)
    g=[[0]*n for _ in range(n)]
    def fill():
        e=[(i,j) for i in range(n) for j in range(n) if g[i][j]==0]
        if not e: return True
        r,c=e[0]
        nums=list(range(1,n+1)); random.shuffle(nums)
        for v in nums:
            if valid(g,r,c,v,n,b):
                g[r][c]=v
                if fill(): return True
                g[r][c]=0
        return False
    fill()
    p=[row[:] for row in g]
    k={"easy":int(n*n*0.4),"medium":int(n*n*0.5),"hard":int(n*n*0.6)}[diff]
    cells=[(i,j) for i in range(n) for j in range(n)]
    random.shuffle(cells)
    for i in range(k):
        r,c=cells[i]; p[r][c]=0
    return p,g
def get_valid_numbers(g,r,c,n,b):
    if g[r][c]!=0: return set()
    s=set(range(1,n+1)); s-=set(g[r])-{0}; s-=set(g[i][c] for i in range(n))-{0}
    br,bc=(r//b)*b,(c//b)*b
    s-=set(g[i][j] for i in range(br,br+b) for j in range(bc,bc+b))-{0}
    return s
def find_conflicts(g,n,b):
    row=[];col=[];box=[]
    for i in range(n):
        for num in range(1,n+1):
            pos=[j for j in range(n) if g[i][j]==num]
            if len(pos)>1: row+= [(i,p) for p in pos]
    for j in range(n):
        for num in range(1,n+1):
            pos=[i for i in range(n) if g[i][j]==num]
            if len(pos)>1: col+=[(p,j) for p in pos]
    for br in range(b):
        for bc in range(b):
            for num in range(1,n+1):
                pos=[(br*b+i,bc*b+j) for i in range(b) for j in range(b) if g[br*b+i][bc*b+j]==num]
                if len(pos)>1: box+=pos
    return set(row+col+box)
def fmt_simple(g,n,b):
    lines=[]
    for i,row in enumerate(g):
        if i>0 and i%b==0: lines.append("-"*(n*2+b-1))
        s=""
        for j,v in enumerate(row):
            if j>0 and j%b==0: s+="| "
            s+=(str(v) if v!=0 else ".")+" "
        lines.append(s.rstrip())
    return "\n".join(lines)
def fmt_conf(g,init,conf,n,b):
    lines=[]
    for i,row in enumerate(g):
        if i>0 and i%b==0: lines.append("-"*(n*3+b-1))
        s=""
        for j,v in enumerate(row):
            if j>0 and j%b==0: s+="| "
            if v==0: s+=" . "
            elif init[i][j]!=0: s+=f"[{v}]"
            elif (i,j) in conf: s+=f"*{v}*"
            else: s+=f" {v} "
        lines.append(s.rstrip())
    return "\n".join(lines)
class Env:
    def __init__(s,n,diff,fmt,maxs):
        s.n=n;s.b=int(n**0.5);s.diff=diff;s.fmt=fmt;s.max=maxs
    def reset(s,seed):
        s.init,s.sol=gen(s.n,s.diff,seed); s.g=[r[:] for r in s.init]; s.steps=0; s.fb=""
        return s.render()
    def parse(s,action):
        action=action.strip().lower()
        pats=[r'place\s+(\d+)\s+at\s+row\s+(\d+)\s+col\s+(\d+)',r'place\s+(\d+)\s+at\s+\((\d+),\s*(\d+)\)',r'place\s+(\d+)\s+at\s+(\d+),\s*(\d+)',r'(\d+)\s+at\s+(\d+),\s*(\d+)',r'\((\d+),\s*(\d+),\s*(\d+)\)',r'(\d+),\s*(\d+),\s*(\d+)']
        for p in pats:
            m=re.search(p,action)
            if m:
                gr=m.groups()
                if 'place' in action or 'at' in action: num,row,col=map(int,gr)
                else: row,col,num=map(int,gr)
                row-=1;col-=1
                if not (0<=row<s.n): return False,-1,-1,-1,f"Row {row+1} is out of range (1-{s.n})"
                if not (0<=col<s.n): return False,-1,-1,-1,f"Column {col+1} is out of range (1-{s.n})"
                if not (1<=num<=s.n): return False,-1,-1,-1,f"Number {num} is out of range (1-{s.n})"
                return True,row,col,num,""
        return False,-1,-1,-1,f"Could not parse action: '{action}'. Expected format: 'place 5 at row 2 col 3' or '2,3,5'"
    def step(s,a):
        s.steps+=1
        ok,row,col,num,err=s.parse(a)
        if not ok:
            s.fb=f"❌ Invalid action format: {err}"
            return s.render(),-0.1,False,{"action_is_effective":False,"action_is_valid":False,"success":False,"error":err}
        if s.init[row][col]!=0:
            s.fb=f"❌ Cannot modify initial cell at ({row+1},{col+1})"
            return s.render(),-0.1,False,{"action_is_effective":False,"action_is_valid":False,"success":False,"error":"Cannot modify initial cells"}
        if not valid(s.g,row,col,num,s.n,s.b):
            c=[]
            if num in s.g[row]: c.append(f"row {row+1}")
            if num in [s.g[i][col] for i in range(s.n)]: c.append(f"column {col+1}")
            b=s.b;br=(row//b)*b;bc=(col//b)*b
            if num in [s.g[i][j] for i in range(br,br+b) for j in range(bc,bc+b)]: c.append(f"box ({br//b+1},{bc//b+1})")
            cs=", ".join(c)
            s.fb=f"❌ Invalid placement: {num} conflicts with {cs}"
            vn=get_valid_numbers(s.g,row,col,s.n,s.b)
            if vn: s.fb+=f"\n   Valid numbers for ({row+1},{col+1}): {sorted(vn)}"
            return s.render(),-0.1,False,{"action_is_effective":False,"action_is_valid":False,"success":False,"error":f"Number {num} conflicts with {cs}","valid_numbers":sorted(vn)}
        s.g[row][col]=num
        cp=num==s.sol[row][col]
        if cp: s.fb=f"✓ Correct! Placed {num} at ({row+1},{col+1})"; r=1.0
        else: s.fb=f"⚠ Placed {num} at ({row+1},{col+1}) - Valid but not optimal"; r=0.5
        solved=all(v!=0 for rr in s.g for v in rr) and not find_conflicts(s.g,s.n,s.b)
        if solved: s.fb+="\n🎉 Congratulations! Puzzle solved!"; r+=10.0
        done=solved or s.steps>=s.max
        filled=sum(1 for rr in s.g for v in rr if v!=0)
        return s.render(),r,done,{"action_is_effective":True,"action_is_valid":True,"success":solved,"correct_placement":cp,"steps_remaining":s.max-s.steps,"cells_filled":filled,"cells_remaining":s.n*s.n-filled}
    def render(s):
        if s.fmt=="simple": return fmt_simple(s.g,s.n,s.b)
        conf=find_conflicts(s.g,s.n,s.b)
        out=["="*50,"SUDOKU PUZZLE","="*50,fmt_conf(s.g,s.init,conf,s.n,s.b),"","Legend: [N]=initial cell, N=user-placed, *N*=conflict, .=empty"]
        if s.fb: out+=["",s.fb]
        if s.fmt=="detailed": return "\n".join(out)
        if conf:
            out+=["","⚠ CONFLICTS DETECTED:"]
            for r,c in sorted(conf): out.append(f"  - Cell ({r+1},{c+1}): {s.g[r][c]}")
        empty=[(i,j) for i in range(s.n) for j in range(s.n) if s.g[i][j]==0]
        if empty and len(empty)<=10:
            out+=["","💡 VALID NUMBERS FOR EMPTY CELLS:"]
            for r,c in empty[:10]:
                if s.init[r][c]==0:
                    v=get_valid_numbers(s.g,r,c,s.n,s.b)
                    if v: out.append(f"  - ({r+1},{c+1}): {sorted(v)}")
        filled=sum(1 for rr in s.g for v in rr if v!=0); ini=sum(1 for rr in s.init for v in rr if v!=0)
        out+=["",f"Progress: {filled}/{s.n*s.n} cells filled ({ini} initial, {filled-ini} placed)",f"Steps: {s.steps}/{s.max}"]
        return "\n".join(out)
rnd=random.Random(7)
eps=[]
for k in range(10):
    n=rnd.choice([4,9]); fmt=rnd.choice(["simple","detailed","with_feedback"]); diff=rnd.choice(["easy","medium","hard"]); seed=rnd.randint(0,1000)
    e=Env(n,diff,fmt,rnd.choice([5,81]))
    obs=e.reset(seed); steps=[]
    for t in range(20):
        # mostly solution-directed actions
        empties=[(i,j) for i in range(n) for j in range(n) if e.g[i][j]==0]
        x=rnd.random()
        if empties and x<0.5:
            i,j=rnd.choice(empties); v=e.sol[i][j] if rnd.random()<0.8 else rnd.randint(1,n)
            a=rnd.choice([f"place {v} at row {i+1} col {j+1}", f"{i+1},{j+1},{v}", f"place {v} at ({i+1}, {j+1})", f"{v} at {i+1},{j+1}"])
        elif x<0.7: a=f"{rnd.randint(0,n+1)},{rnd.randint(0,n+1)},{rnd.randint(0,n+1)}"
        elif x<0.8: a=rnd.choice(["hello","format 1,2,3","PLACE 3 AT ROW 1 COL 1"," (1,1,1) "])
        else:
            i,j=rnd.randrange(n),rnd.randrange(n); a=f"place {rnd.randint(1,n)} at row {i+1} col {j+1}"
        o,r,d,info=e.step(a)
        steps.append({"a":a,"obs":o,"r":r,"done":d,"info":info})
        if d: break
    eps.append({"n":n,"fmt":fmt,"diff":diff,"seed":seed,"max":e.max,"obs0":obs,"steps":steps})
json.dump(eps,open(sys.argv[1],'w'),ensure_ascii=False,indent=0)
