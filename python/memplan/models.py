"""The models the exporter knows: names, builders and natural input sizes.

Every builder returns a torch.nn.Module with random weights (weights=None,
and no pretrained backbone: nothing is downloaded).  ``natural`` is the
input size the model is usually run at (H, W).
"""

import warnings

SIZE_224 = (224, 224)


class Spec:
    """One exportable model."""

    def __init__(self, name, title, build, natural=SIZE_224, task="classification",
                 square_multiple=None):
        self.name = name
        self.title = title
        self.build = build              # build(size) -> nn.Module
        self.natural = natural
        self.task = task
        self.square_multiple = square_multiple   # ViT: square, multiple of the patch


def _tv(fn_name, **kw):
    def build(size):
        import torchvision.models as tvm
        return getattr(tvm, fn_name)(weights=None, **kw)
    return build


def _seg(fn_name):
    def build(size):
        import torchvision.models.segmentation as seg
        return getattr(seg, fn_name)(weights=None, weights_backbone=None)
    return build


def _vit(fn_name):
    def build(size):
        import torchvision.models as tvm
        return getattr(tvm, fn_name)(weights=None, image_size=size[0])
    return build


_SPECS = [
    Spec("alexnet", "AlexNet", _tv("alexnet")),
    Spec("vgg16", "VGG-16", _tv("vgg16")),
    Spec("vgg19", "VGG-19", _tv("vgg19")),
    Spec("googlenet", "GoogLeNet (Inception v1)", _tv("googlenet", aux_logits=True, init_weights=True)),
    Spec("inception_v3", "Inception v3", _tv("inception_v3", aux_logits=True, init_weights=True),
         natural=(299, 299)),
    Spec("resnet18", "ResNet-18", _tv("resnet18")),
    Spec("resnet34", "ResNet-34", _tv("resnet34")),
    Spec("resnet50", "ResNet-50", _tv("resnet50")),
    Spec("resnet101", "ResNet-101", _tv("resnet101")),
    Spec("resnet152", "ResNet-152", _tv("resnet152")),
    Spec("densenet121", "DenseNet-121", _tv("densenet121")),
    Spec("mobilenet_v2", "MobileNet v2", _tv("mobilenet_v2")),
    Spec("mobilenet_v3_large", "MobileNet v3 (large)", _tv("mobilenet_v3_large")),
    Spec("mobilenet_v3_small", "MobileNet v3 (small)", _tv("mobilenet_v3_small")),
    Spec("squeezenet1_0", "SqueezeNet 1.0", _tv("squeezenet1_0")),
    Spec("squeezenet1_1", "SqueezeNet 1.1", _tv("squeezenet1_1")),
    Spec("shufflenet_v2_x1_0", "ShuffleNet v2 x1.0", _tv("shufflenet_v2_x1_0")),
    Spec("efficientnet_b0", "EfficientNet-B0", _tv("efficientnet_b0")),
    Spec("regnet_y_400mf", "RegNetY-400MF", _tv("regnet_y_400mf")),
    Spec("convnext_tiny", "ConvNeXt-Tiny", _tv("convnext_tiny")),
    Spec("vit_b_16", "ViT-B/16", _vit("vit_b_16"), square_multiple=16),
    Spec("swin_t", "Swin-T", _tv("swin_t")),
    Spec("deeplabv3_resnet50", "DeepLab v3 (ResNet-50)", _seg("deeplabv3_resnet50"),
         natural=(520, 520), task="segmentation"),
    Spec("fcn_resnet50", "FCN (ResNet-50)", _seg("fcn_resnet50"),
         natural=(520, 520), task="segmentation"),
]

MODELS = {s.name: s for s in _SPECS}


def build(spec, size):
    """The model of ``spec`` for inputs of ``size`` (H, W), in eval mode."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spec.build(size).eval()
