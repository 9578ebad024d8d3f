"""An example of a model from a Python file, for `tunebench run --model` and `tunebench tune` on
the pypi build (its Python worker runs it):

    build/pypi/tunebench tune --model models/examples/smallnet.py

A small convolutional classifier for 32x32 colour images (CIFAR-sized): three convolution blocks
with batch norm, then a linear head. What tunebench needs of a file like this:
  - a torch.nn.Module class (or a function returning one) that builds with no arguments;
  - get_example_inputs(): its forward's inputs, a tensor or a tuple of tensors, batch first
    (tunebench repeats their rows to the batch it measures, --batch);
  - optionally compute_loss(output), the training loss (--mode train); without it the loss is
    the sum of the outputs.
"""
import torch
from torch import nn


def block(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True), nn.MaxPool2d(2))


class SmallNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(block(3, 32), block(32, 64), block(64, 128))
        self.head = nn.Linear(128 * 4 * 4, classes)

    def forward(self, images):
        return self.head(self.features(images).flatten(1))

    def get_example_inputs(self):
        return (torch.randn(8, 3, 32, 32),)

    def compute_loss(self, logits):
        # Cross-entropy against class 0 for every image: a loss of the right shape and cost.
        return nn.functional.cross_entropy(logits, torch.zeros(len(logits), dtype=torch.long))
