"""Run under mpiexec by tests/test_distributed_rank0_writes.py: the summary writers and the Saver
write only on rank 0 of a process group; every rank still gets the path and can read it back."""

import os
import sys

import numpy as np

import rustgrad.compat.v1 as tf
import rustgrad.distributed as dist
from rustgrad.utils.tensorboard import SummaryWriter

folder = sys.argv[1]
dist.init_process_group("mpi")
r = dist.get_rank()

with SummaryWriter(os.path.join(folder, "eager")) as writer:
    writer.add_scalar("loss", 1.0 + r, 0)

v = tf.Variable(np.arange(3.0), name="v")
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    file_writer = tf.summary.FileWriter(os.path.join(folder, "static"), sess.graph)
    file_writer.close()
    path = saver.save(sess, os.path.join(folder, "model"), global_step=7)
dist.barrier()
assert path == os.path.join(folder, "model-7"), path
for sub in ("eager", "static"):
    files = os.listdir(os.path.join(folder, sub)) if os.path.isdir(os.path.join(folder, sub)) else []
    assert len([f for f in files if f.startswith("events.out.tfevents")]) == 1, (sub, files)
with tf.Session() as sess:
    saver.restore(sess, tf.train.latest_checkpoint(folder))  # every rank reads rank 0's file
    assert sess.run(v).tolist() == [0.0, 1.0, 2.0]
print(f"rank {r}: rank0 writes ok", flush=True)
