import torch
import torch.nn as nn


class Model(nn.Module):
    """DLRM dot interaction: pairwise dot products of F embeddings (strict upper triangle) after the dense vector."""

    def __init__(self):
        super().__init__()

    def forward(self, dense, emb):
        num_features = emb.shape[1]
        gram = torch.bmm(emb, emb.transpose(1, 2))
        rows, cols = torch.triu_indices(num_features, num_features, offset=1, device=emb.device)
        return torch.cat([dense, gram[:, rows, cols]], dim=1)


batch_size = 8192
num_features = 27
embed_dim = 128
dense_dim = 128


def get_inputs():
    dense = torch.randn(batch_size, dense_dim)
    emb = torch.randn(batch_size, num_features, embed_dim)
    return [dense, emb]


def get_init_inputs():
    return []
