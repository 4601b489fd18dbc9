"""The models of bench/torch/bench_fit.py and each one's nn.Sequential of
top-level pieces (what torch.utils.checkpoint.checkpoint_sequential needs).

Every piece is a module of the model itself or a small wrapper around its
modules and parameters, so the Sequential shares the model's weights and a
step of either trains the same tensors.
"""

import torch
import torch.nn as nn
import torchvision

# name -> (batch, dim) at the size and in --quick mode; dim is the
# image side for the vision models and the sequence length T for the LSTM.
SIZES = {
    "resnet50": {"full": (32, 224), "quick": (4, 112)},
    "vit_b_16": {"full": (8, 224), "quick": (2, 64)},
    "lstm": {"full": (32, 256), "quick": (4, 32)},
}
LSTM_FEATURES, LSTM_HIDDEN, LSTM_LAYERS, LSTM_CLASSES = 128, 512, 4, 100


class LSTMNet(nn.Module):
    """[N, T, F] -> logits [N, K]: single-layer LSTMs applied in sequence
    (separate modules, so each one is a piece to checkpoint), a linear head
    on the last step."""

    def __init__(self, features=LSTM_FEATURES, hidden=LSTM_HIDDEN, layers=LSTM_LAYERS,
                 classes=LSTM_CLASSES):
        super().__init__()
        self.lstms = nn.ModuleList(nn.LSTM(features if i == 0 else hidden, hidden,
                                           batch_first=True) for i in range(layers))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        for lstm in self.lstms:
            x, _ = lstm(x)
        return self.head(x[:, -1])


class SequenceOnly(nn.Module):
    """An nn.LSTM whose (h, c) state is dropped: a Sequential passes one tensor."""

    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x):
        return self.lstm(x)[0]


class TokenHead(nn.Module):
    """head applied to one position of a [N, S, D] sequence (the ViT class
    token at 0, the LSTM's last step at -1)."""

    def __init__(self, head, position):
        super().__init__()
        self.head = head
        self.position = position

    def forward(self, x):
        return self.head(x[:, self.position])


class PatchPrefix(nn.Module):
    """VisionTransformer's work before its encoder blocks: patch embedding,
    class token, position embedding and the encoder's dropout (the same
    operations as VisionTransformer._process_input and Encoder.forward)."""

    def __init__(self, vit):
        super().__init__()
        self.conv_proj = vit.conv_proj
        self.class_token = vit.class_token
        self.pos_embedding = vit.encoder.pos_embedding
        self.dropout = vit.encoder.dropout

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)    # [N, patches, D]
        token = self.class_token.expand(x.shape[0], -1, -1)
        return self.dropout(torch.cat([token, x], dim=1) + self.pos_embedding)


def resnet50(batch, side):
    model = torchvision.models.resnet50()
    blocks = [b for layer in (model.layer1, model.layer2, model.layer3, model.layer4)
              for b in layer]
    pieces = [model.conv1, model.bn1, model.relu, model.maxpool, *blocks,
              model.avgpool, nn.Flatten(1), model.fc]
    return model, torch.randn(batch, 3, side, side), nn.Sequential(*pieces)


def vit_b_16(batch, side):
    # The constructor takes any image_size divisible by the patch size (16);
    # the position embedding is sized for it and inputs must match it exactly.
    model = torchvision.models.vit_b_16(image_size=side)
    pieces = [PatchPrefix(model), *model.encoder.layers, model.encoder.ln,
              TokenHead(model.heads, 0)]
    return model, torch.randn(batch, 3, side, side), nn.Sequential(*pieces)


def lstm(batch, steps):
    model = LSTMNet()
    pieces = [*(SequenceOnly(m) for m in model.lstms), TokenHead(model.head, -1)]
    return model, torch.randn(batch, steps, LSTM_FEATURES), nn.Sequential(*pieces)


BUILD = {"resnet50": resnet50, "vit_b_16": vit_b_16, "lstm": lstm}


def build(name, batch, dim, seed=0):
    """(model, input, sequential): the same weights for the same seed."""
    torch.manual_seed(seed)
    return BUILD[name](batch, dim)


def describe(name, batch, dim):
    if name == "lstm":
        return (f"batch {batch}, T={dim}, F={LSTM_FEATURES}, {LSTM_LAYERS} x LSTM "
                f"hidden {LSTM_HIDDEN}, {LSTM_CLASSES} classes")
    return f"batch {batch}, 3x{dim}x{dim}"
