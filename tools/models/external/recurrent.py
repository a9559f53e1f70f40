"""Recurrent layers from torch.nn."""
import torch
import torch.nn as nn

from .common import model

# ---------------------------------------------------------------- recurrent
class Rnn(nn.Module):
    def __init__(self, rnn, head):
        super().__init__()
        self.rnn, self.head = rnn, head

    def forward(self, x):
        y = self.rnn(x)[0]
        return self.head(y)


def seq_features(t=12, f=10, batch_first=True):
    x = torch.randn(1, t, f, generator=torch.Generator().manual_seed(0))
    return x if batch_first else x.transpose(0, 1).contiguous()


@model("gru_bidir", "torch.nn", "2-layer bidirectional GRU (batch_first)")
def _():
    return Rnn(nn.GRU(10, 16, num_layers=2, bidirectional=True, batch_first=True), nn.Linear(32, 4)), (seq_features(),)


@model("lstm_bidir", "torch.nn", "2-layer bidirectional LSTM (batch_first)")
def _():
    return Rnn(nn.LSTM(10, 16, num_layers=2, bidirectional=True, batch_first=True), nn.Linear(32, 4)), (seq_features(),)


@model("lstm_proj", "torch.nn", "LSTM with projection (proj_size), sequence-first")
def _():
    return Rnn(nn.LSTM(10, 16, num_layers=1, proj_size=8), nn.Linear(8, 4)), (seq_features(batch_first=False),)


@model("rnn_tanh", "torch.nn", "2-layer Elman RNN (tanh)")
def _():
    return Rnn(nn.RNN(10, 16, num_layers=2, batch_first=True), nn.Linear(16, 4)), (seq_features(),)


