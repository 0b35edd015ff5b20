// Package metamathqa is the MetaMathQA question-answering environment
// (upstream env_type "metamathqa", shared spec envs.md §5).
//
// Reset picks a question with Python's random seeded by the seed (as
// upstream, so indices match); the reference answer is the text after the
// first "The answer is: " of the record's response. Step compares the
// answer after lowercasing and deleting all whitespace: a correct answer
// after k earlier attempts earns 1/2^k and ends the episode.
//
// Upstream loads the Hugging Face dataset meta-math/MetaMathQA. This
// package reads local JSON, JSON Lines or parquet copies (see [Resolve]);
// without
// one it uses the embedded GSM8K test split converted to MetaMathQA's shape
// (data/README.md, MIT licence), so the env runs without a download.
package metamathqa
