"""Writes the lowered program of a step whose loss ignores labels, under
gradient accumulation (2 micro-batches), to argv[1]: its `input2` is the
label count the runtime fills (zrt.label_count_of)
(test/python/label-count-program.test)."""

import sys

import zero

graph = zero.Graph("lm")
ids = graph.input("ids", [2, 5], "i32")
labels = graph.input("labels", [2, 5], "i32")
embedding = zero.nn.Embedding(graph, "wte", 11, 8)
head = zero.nn.Linear(graph, "head", 8, 11)
graph.minimize(zero.softmax_cross_entropy(head(embedding(ids)), labels,
                                          ignore_index=-100))
graph.config.optimizer(zero.SGD(lr=0.1)).gradient_accumulation_steps(2)
with open(sys.argv[1], "w") as out:
    out.write(graph.compile(1).ir("program"))
