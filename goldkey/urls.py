from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from items import views as item_views

urlpatterns = [
    path("", item_views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("items/", include("items.urls")),
    path("annotate/", include("annotation.urls")),
    path("adjudicate/", include("adjudication.urls")),
    path("council/", include("council.urls")),
    path("keys/", include("keys.urls")),
    path("api/", include("items.api_urls")),
    path("api/", include("annotation.api_urls")),
    path("api/", include("adjudication.api_urls")),
    path("api/", include("keys.api_urls")),
    path("api/", include("council.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]
