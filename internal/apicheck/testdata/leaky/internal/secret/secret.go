package secret

type Handle struct{ n int }

type Kind int
