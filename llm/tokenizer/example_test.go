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

func ExampleParseTemplate() {
	tmpl, err := tokenizer.ParseTemplate(tokenizer.Qwen25ChatTemplate)
	if err != nil {
		panic(err)
	}
	out, err := tmpl.Render(map[string]any{
		"messages":              []tokenizer.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "2+2?"}},
		"add_generation_prompt": true,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", out)
	// Output:
	// "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
}

func ExampleNewStreamDecoder() {
	tok := tokenizer.NewByte()
	d := tokenizer.NewStreamDecoder(tok, true)
	for _, id := range tok.Encode("é!<|im_end|>") {
		fmt.Printf("%q ", d.Add(id))
	}
	fmt.Printf("%q\n", d.Flush())
	// Output:
	// "" "é" "!" "" ""
}

func ExampleParseTemplate_error() {
	_, err := tokenizer.ParseTemplate("{% for m in messages %}\n{% foo %}{% endfor %}")
	fmt.Println(err)
	// Output:
	// chat template: jinja parse: line 2: unknown statement "foo"
}
