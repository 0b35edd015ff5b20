package tokenizer_test

import (
	"fmt"
	"os"

	"ragen/llm/tokenizer"
)

// ExampleTrainBPE trains a small tokenizer on chat prompts, saves it as a
// Hugging Face folder and loads it back.
func ExampleTrainBPE() {
	tok := tokenizer.NewByte()
	var corpus []string
	for _, grid := range []string{"#P_X_O#", "#_PX_O#", "#__PXO#", "#O_XP_#"} {
		prompt, err := tok.ApplyChatTemplate([]tokenizer.Message{
			{Role: "user", Content: "Push the box onto the target.\nState:\n" + grid},
		}, true)
		if err != nil {
			panic(err)
		}
		corpus = append(corpus, prompt)
	}
	bpe, err := tokenizer.TrainBPE(corpus, tokenizer.TrainOptions{VocabSize: 300, MinFrequency: 2})
	if err != nil {
		panic(err)
	}
	ids := bpe.Encode("Push the box.<|im_end|>")
	var toks []string
	for _, id := range ids {
		s, _ := bpe.IDToken(id)
		toks = append(toks, s)
	}
	fmt.Println(bpe.VocabSize(), ids, toks)
	fmt.Println(len(bpe.Encode(corpus[0])), "ids instead of", len(tok.Encode(corpus[0])))

	dir, err := os.MkdirTemp("", "bpe")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := bpe.Save(dir); err != nil {
		panic(err)
	}
	loaded, err := tokenizer.LoadHF(dir)
	if err != nil {
		panic(err)
	}
	fmt.Println(loaded.Encode("Push the box.<|im_end|>"), loaded.EOSIDs(), loaded.PadID())
	// Output:
	// 300 [279 104 270 269 292 46 299] [Pus h Ġthe Ġb ox . <|im_end|>]
	// 72 ids instead of 141
	// [279 104 270 269 292 46 299] [299] 297
}
