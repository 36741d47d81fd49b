module github.com/rlbench/rlbench

go 1.26
