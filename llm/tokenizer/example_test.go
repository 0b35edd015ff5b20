package tokenizer_test

import (
	"fmt"

	"ragen/llm/tokenizer"
)

func ExampleNewByte() {
	tok := tokenizer.NewByte()
	prompt, err := tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: "Hi"}}, true)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", prompt)
	ids := tok.Encode("<|im_start|>Hi")
	fmt.Println(ids, tok.Decode(ids))
	// Output:
	// "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	// [257 72 105] <|im_start|>Hi
}
