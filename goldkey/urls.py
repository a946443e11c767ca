from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from goldkey import logins
from keys import views as key_views

# The Redoc bundle injects its generated <style> elements and runs its search index in a blob: worker; only
# its own page is loosened for that.
redoc_view = csp_update({"style-src": [UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})(
    SpectacularRedocView.as_view(url_name="schema")
)

# The admin's registrations, here rather than at start-up (settings: SimpleAdminConfig), so that only a
# process that serves pages pays for importing every app's admin module.
admin.autodiscover()

urlpatterns = [
    path("", key_views.home, name="home"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Django's own password views, with Goldkey's templates (templates/registration/) and kebab-case names; the
    # change checks the old password as a login does (goldkey.logins).
    path("accounts/password/change/", logins.PasswordChangeView.as_view(success_url=reverse_lazy("password-change-done")),
         name="password-change"),
    path("accounts/password/change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password-change-done"),
    path("accounts/password/reset/", auth_views.PasswordResetView.as_view(success_url=reverse_lazy("password-reset-done")),
         name="password-reset"),
    path("accounts/password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password-reset-done"),
    path("accounts/password/reset/<uidb64>/<token>/",
         auth_views.PasswordResetConfirmView.as_view(success_url=reverse_lazy("password-reset-complete")),
         name="password-reset-confirm"),
    path("accounts/password/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password-reset-complete"),
    path("admin/", admin.site.urls),
    path("items/", include("items.urls")),
    path("annotate/", include("annotation.urls")),
    path("adjudicate/", include("adjudication.urls")),
    path("council/", include("council.urls")),
    path("keys/", include("keys.urls")),
    # A protocol wing's own score page sits beside the key's other score pages (TWIST Track C's judged runs).
    path("keys/<str:version>/scores/chains/", include("chains.urls")),
    path("keys/<str:version>/scores/", include("scoring.urls")),
    path("api/", include("items.api_urls")),
    path("api/", include("annotation.api_urls")),
    path("api/", include("adjudication.api_urls")),
    path("api/", include("keys.api_urls")),
    path("api/", include("scoring.api_urls")),
    path("api/", include("chains.api_urls")),
    path("api/", include("council.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves Swagger UI's start-up script as a separate file, so the page has no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", redoc_view, name="api-redoc"),
]
