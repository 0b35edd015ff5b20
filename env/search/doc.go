// Package search is the search-augmented question-answering environment
// (upstream env_type "search", tags SearchQA and SearchQAMock; shared spec
// envs.md §10).
//
// The model answers a question over several turns with search[query]
// (retrieves documents) and finish[answer] (scored by exact match or token
// F1 against the ground truths). Other text is read as an answer through
// upstream's fallback extraction.
//
// Step info carries upstream's keys per action kind (action_is_effective,
// action_is_valid, success, action_type, and query, answer or
// raw_action/extracted_answer, with reward_metadata from [ScoreAnswer]);
// see shared spec service-envs.md §1.
//
// Retrieval has three back ends: upstream's mock mode (two fixed
// documents); upstream's retrieval server (retriever: server;
// POST {url}/retrieve, [ServerClient]); and, by default (ours), an
// embedded Okapi BM25 index ([BM25]) over a local JSONL corpus — the
// embedded one (data/, CC0) unless corpus_path names another — so the env
// runs with no server. Questions come from train_path (parquet or JSONL);
// upstream's default path with no file there gives the embedded
// question set.
package search
