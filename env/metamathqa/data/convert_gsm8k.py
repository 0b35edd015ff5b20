# Converts GSM8K's test split (openai/grade-school-math, MIT) to MetaMathQA's
# record shape: query = question; response = the worked answer with the
# calculator annotations <<...>> removed and the final "#### N" line written
# as MetaMathQA writes it, "The answer is: N".
# Usage: python3 convert_gsm8k.py test.jsonl > gsm8k_test.jsonl
import json, re, sys
for line in open(sys.argv[1], encoding="utf-8"):
    if not line.strip():
        continue
    row = json.loads(line)
    body, final = row["answer"].rsplit("####", 1)
    body = re.sub(r"<<[^>]*>>", "", body).rstrip()
    response = body + "\nThe answer is: " + final.strip()
    out = {"query": row["question"], "response": response, "type": "GSM8K_test"}
    print(json.dumps(out, ensure_ascii=False))
